"""trainexec/jobs/{shape,naming,policies,tf_config}.py: the one description of a job's
shape, the names the operator accepts, the run policies chosen for a shape and what they
decide for a local run, and the TF_CONFIG the training operator writes. Pure: tables.
"""

from __future__ import annotations

import json

import pytest

from trainexec.jobs.naming import closest, env_name_problem, label_problem, name_problem
from trainexec.jobs.policies import RunPolicies, choose_policies, local_success
from trainexec.jobs.shape import JobShape, Role
from trainexec.jobs.tf_config import is_distributed, service_addresses, tfjob_tf_config

pytestmark = pytest.mark.any_line


def _shape(chief=True, workers=1, ps=0, evaluator=False):
    return JobShape.from_counts(["python", "t.py"], workers=workers, ps=ps,
                                evaluator=evaluator, chief=chief, name="demo")


# -- JobShape ---------------------------------------------------------------------------
def test_from_counts_is_the_launchers_shape_in_tf_config_order():
    shape = JobShape.from_counts(["python", "t.py"], workers=2, ps=1, evaluator=True,
                                 env={"A": "1"}, restart_policy="OnFailure")
    assert shape.tasks() == [("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0),
                             ("evaluator", 0)]
    assert {r.command for r in shape.roles} == {("python", "t.py")}
    assert {r.env for r in shape.roles} == {(("A", "1"),)}
    assert {r.restart_policy for r in shape.roles} == {"OnFailure"}
    assert (shape.leader, shape.trains, shape.task_count) == ("chief", True, 5)
    assert JobShape.from_counts(["x"], chief=False, workers=0).trains is False
    assert JobShape.from_counts(["x"], chief=False, workers=3).leader is None


def test_roles_are_ordered_and_each_type_is_there_once():
    shape = JobShape((Role("evaluator"), Role("ps", 2), Role("master"), Role("worker", 0)))
    assert [r.task_type for r in shape.roles] == ["master", "worker", "ps", "evaluator"]
    assert shape.tasks() == [("master", 0), ("ps", 0), ("ps", 1), ("evaluator", 0)]
    with pytest.raises(ValueError, match="appears twice"):
        JobShape((Role("worker"), Role("worker")))
    with pytest.raises(ValueError, match="a chief or a master, not both"):
        JobShape((Role("chief"), Role("master")))
    with pytest.raises(ValueError, match="task type 'Worker'"):
        Role("Worker")
    with pytest.raises(ValueError, match="expected an integer >= 0"):
        Role("worker", -1)


def test_with_command_and_restart_policy_change_every_role():
    shape = JobShape((Role("chief", 1, None, where="spec.tfReplicaSpecs.Chief"),
                      Role("worker", 2, ("a",)), Role("ps", 0)))
    assert [r.where for r in shape.without_command()] == ["spec.tfReplicaSpecs.Chief"]
    replaced = shape.with_command(["python", "job.py"]).with_restart_policy("Never")
    assert {(r.command, r.restart_policy) for r in replaced.roles} == {
        (("python", "job.py"), "Never")}
    assert replaced.without_command() == []


# -- names ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, words", [
    ("mnist", None), ("a", None), ("dist-mnist-1", None), ("x" * 63, None),
    ("Mnist", "is not a DNS-1035 label"), ("1mnist", "e.g. 'mnist'"),
    ("mnist-", "is not a DNS-1035 label"), ("my_job", "e.g. 'my-job'"),
    ("x" * 64, "64 characters"), ("", "is not a name"), (3, "is not a name"),
])
def test_a_tfjob_name_is_a_dns_1035_label(name, words):
    problem = name_problem(name)
    assert (problem is None) if words is None else (words in problem)


@pytest.mark.parametrize("name, ok", [("kubeflow", True), ("1ns", True), ("NS", False),
                                      ("a.b", False), ("", False)])
def test_a_namespace_is_a_dns_1123_label(name, ok):
    assert (label_problem(name) is None) is ok


@pytest.mark.parametrize("name, words", [("TF_USE_LEGACY_KERAS", None), ("a.b-c", None),
                                         ("1X", "not an environment variable name"),
                                         ("A B", "not an environment variable name"),
                                         ("TF_CONFIG", "set for every pod")])
def test_env_names(name, words):
    problem = env_name_problem(name)
    assert (problem is None) if words is None else (words in problem)


@pytest.mark.parametrize("word, choice", [("Workr", "Worker"), ("worker", "Worker"),
                                          ("Onfailure", "OnFailure"), ("Cheif", "Chief"),
                                          ("Launcher", None)])
def test_closest_guesses_the_misspelled_choice(word, choice):
    assert closest(word, ("Chief", "Master", "Worker", "PS", "Evaluator", "OnFailure")
                   ) == choice


# -- run policies -----------------------------------------------------------------------
@pytest.mark.parametrize("shape, success, words", [
    (_shape(evaluator=True), "", ["the evaluator runs its final evaluation"]),
    (_shape(ps=2), "", ["trainexec's ps exit 0"]),
    (_shape(chief=False, workers=3), "AllWorkers", ["successPolicy AllWorkers"]),
    (_shape(workers=0), "", ['the job succeeds when the chief exits 0']),
])
def test_choose_policies_never_deletes_a_finishing_pod_and_says_why(shape, success, words):
    policies = choose_policies(shape)
    assert policies.clean_pod_policy == "None"  # Running or All delete a finishing evaluator
    assert policies.success_policy == success
    text = " ".join(policies.clean_reasons + policies.success_reasons)
    assert all(w in text for w in words), text


@pytest.mark.parametrize("shape, policies, wait_for, ending", [
    # The operator: the chief decides; cleanPodPolicy None leaves the evaluator to finish.
    (_shape(evaluator=True), RunPolicies(), ("chief:0", "evaluator:0"), True),
    (_shape(evaluator=True), RunPolicies("Running"), ("chief:0",), False),
    (_shape(evaluator=True), RunPolicies("All"), ("chief:0",), False),
    (_shape(ps=1), RunPolicies(), ("chief:0",), True),
    (JobShape((Role("master"), Role("worker", 2))), RunPolicies(), ("master:0",), True),
    # Without a chief: worker 0, or every worker with AllWorkers.
    (_shape(chief=False, workers=3), RunPolicies(), ("worker:0",), True),
    (_shape(chief=False, workers=3), RunPolicies("None", "AllWorkers"),
     ("worker:0", "worker:1", "worker:2"), True),
    # AllWorkers is not read when a chief leads.
    (_shape(workers=2), RunPolicies("None", "AllWorkers"), ("chief:0",), True),
])
def test_local_success_follows_the_operator(shape, policies, wait_for, ending):
    decided = local_success(shape, policies)
    assert (decided.wait_for, decided.wait_for_ending) == (wait_for, ending)
    assert decided.summary.startswith(f"succeeds when {' and '.join(wait_for)} exit 0")


# -- TF_CONFIG as the operator writes it --------------------------------------------------
def test_service_addresses_are_the_pods_headless_services():
    shape = JobShape((Role("chief"), Role("worker", 2), Role("evaluator"), Role("ps", 0)))
    assert service_addresses(shape, "demo", "ml", {"worker": 2300}) == {
        "chief": ["demo-chief-0.ml.svc:2222"],
        "worker": ["demo-worker-0.ml.svc:2300", "demo-worker-1.ml.svc:2300"],
        "ps": [],
        "evaluator": ["demo-evaluator-0.ml.svc:2222"]}


def test_tfjob_tf_config_lists_every_role_the_evaluator_too_in_gos_json():
    cluster = {"worker": ["w0:1", "w1:1"], "chief": ["c:1"], "evaluator": ["e:1"], "ps": []}
    text = tfjob_tf_config(cluster, "evaluator", 0)
    assert text == ('{"cluster":{"chief":["c:1"],"evaluator":["e:1"],"ps":[],'
                    '"worker":["w0:1","w1:1"]},"task":{"type":"evaluator","index":0},'
                    '"environment":"cloud"}')


@pytest.mark.parametrize("task, view", [
    (("worker", 1), {"worker": {"1": "w1:1"}, "ps": ["p0:1", "p1:1"]}),
    (("ps", 1), {"worker": {}, "ps": ["p1:1"]}),
    (("chief", 0), {"worker": {}, "ps": []}),
    (("evaluator", 0), {"worker": {}, "ps": []}),
])
def test_the_sparse_view_of_enable_dynamic_worker(task, view):
    cluster = {"chief": ["c:1"], "worker": ["w0:1", "w1:1"], "ps": ["p0:1", "p1:1"],
               "evaluator": ["e:1"]}
    config = json.loads(tfjob_tf_config(cluster, *task, sparse=True))
    assert config == {"cluster": view, "task": {"type": task[0], "index": task[1]}}


@pytest.mark.parametrize("roles, distributed", [
    ((Role("worker"),), False), ((Role("chief"), Role("ps", 0)), False),
    ((Role("worker", 2),), True), ((Role("chief"), Role("evaluator")), True),
])
def test_one_replica_in_all_gets_no_tf_config(roles, distributed):
    assert is_distributed(JobShape(roles)) is distributed
