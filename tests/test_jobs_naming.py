"""trainexec/jobs/naming.py: the names Kubernetes and the TFJob operator accept (a TFJob
name, a namespace or container name, a container's environment variable), the words each
check answers with, and the replica types as the operator spells them and as TF_CONFIG
writes them. tests/test_jobs_shape.py has the accept/refuse tables; these test the rest.
"""

from __future__ import annotations

import re

import pytest

from trainexec.jobs.naming import (closest, env_name_problem, label_problem, name_problem,
                                   replica_type, task_type_of)
from trainexec.task_types import SUPPORTED_TASK_TYPES

pytestmark = pytest.mark.any_line

# TFJob's replica types as the Kubeflow training operator spells them, and the task
# type each becomes in TF_CONFIG.
OPERATOR_SPELLINGS = [("Chief", "chief"), ("Master", "master"), ("Worker", "worker"),
                      ("PS", "ps"), ("Evaluator", "evaluator")]


@pytest.mark.parametrize("spelled, task_type", OPERATOR_SPELLINGS)
def test_a_replica_type_is_read_in_any_case_and_lowercased_for_tf_config(spelled, task_type):
    for written in (spelled, spelled.lower(), spelled.upper(), spelled.swapcase()):
        assert replica_type(written) == spelled
    assert task_type_of(spelled) == task_type
    assert task_type in SUPPORTED_TASK_TYPES


def test_the_replica_types_are_exactly_trainexecs_task_types():
    assert sorted(task_type_of(spelled) for spelled, _ in OPERATOR_SPELLINGS) == sorted(
        SUPPORTED_TASK_TYPES)


@pytest.mark.parametrize("name", ["Launcher", "Workers", " worker", "worker ", "", None, 3])
def test_what_is_no_replica_type_is_none_not_an_error(name):
    assert replica_type(name) is None


@pytest.mark.parametrize("name, suggestion", [
    ("My Job (v2)!", "my-job-v2"),   # every run of other characters becomes one '-'
    ("a.b.c", "a-b-c"),
    ("-a-", "a"),                    # no '-' at either end
    ("42", "job"),                   # nothing left once leading digits go
    ("___", "job"),
    ("7-Up", "up"),
])
def test_a_bad_tfjob_name_is_refused_with_a_suggestion_that_is_itself_accepted(
        name, suggestion):
    problem = name_problem(name)
    assert problem.startswith(f"{name!r} is not a DNS-1035 label: ")
    assert "starting with a letter and ending with a letter or digit" in problem
    suggested = re.search(r"e\.g\. '([^']*)'$", problem).group(1)
    assert suggested == suggestion
    assert name_problem(suggested) is None


def test_a_name_too_long_for_kubernetes_is_refused_naming_its_length_before_anything_else():
    assert name_problem("a" * 63) is None
    problem = name_problem("Too_Long" * 12)       # 96 characters, and not a label either
    assert problem.startswith("'Too_Long")
    assert "has 96 characters" in problem and "of at most 63" in problem
    assert "e.g." not in problem                  # no suggestion as long as the name


def test_a_namespace_or_container_name_may_start_with_a_digit_but_a_tfjob_name_may_not():
    assert label_problem("2gpu", "container name") is None
    assert "not a DNS-1035 label" in name_problem("2gpu")
    assert label_problem("a" * 63) is None
    assert "at most 63 characters" in label_problem("a" * 64)


@pytest.mark.parametrize("name, what, words", [
    ("Tensor_Flow", "container name",
     "'Tensor_Flow' is not a DNS-1123 label: a container name is lowercase letters"),
    ("-ml", "namespace", "'-ml' is not a DNS-1123 label: a namespace is"),
    (None, "container name", "None is not a container name: give lowercase letters"),
    ("", "namespace", "'' is not a namespace: give lowercase letters, digits and '-'"),
])
def test_a_bad_label_is_refused_in_the_callers_words(name, what, words):
    assert words in label_problem(name, what)


@pytest.mark.parametrize("name", ["", None, "9LIVES", "A=B"])
def test_a_bad_environment_variable_name_is_refused_saying_what_a_name_may_hold(name):
    problem = env_name_problem(name)
    assert problem.startswith(f"{name!r} is not an environment variable name")
    assert "not starting with a digit" in problem


def test_tf_config_is_left_to_the_operator_but_a_differently_cased_name_is_another_variable():
    problem = env_name_problem("TF_CONFIG")
    assert "training operator" in problem and "trainexec launch" in problem
    assert problem.endswith("leave it out")
    assert env_name_problem("tf_config") is None   # names are case-sensitive


@pytest.mark.parametrize("word, choice", [("WORKR", "Worker"), ("pss", "PS"),
                                          ("evaluater", "Evaluator"), (3, None)])
def test_closest_answers_in_the_choices_own_spelling(word, choice):
    assert closest(word, ["Chief", "Worker", "PS", "Evaluator"]) == choice
    assert closest(word, []) is None


def test_the_suggested_name_is_itself_a_valid_name_when_lowering_lengthens_it():
    problem = name_problem("\u0130" * 40)  # 40 characters; lowered, 80
    suggestion = problem.rsplit("e.g. ", 1)[1].strip("'")
    assert len(suggestion) <= 63 and name_problem(suggestion) is None
