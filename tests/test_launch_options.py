"""trainexec/launch/options.py: the launcher's option checks, told in LocalCluster's
keywords or in `trainexec launch`'s flags; `wait_for` and `restart_groups` expanded
to task names. No processes are started."""

from __future__ import annotations

import re

import pytest

from trainexec.errors import ConfigError
from trainexec.launch import LocalCluster
from trainexec.launch.options import FLAGS, KEYWORDS, check_options
from processes import role

pytestmark = pytest.mark.any_line

VALID = dict(command=["python", "train.py"], workers=1, ps=0, chief=True, max_restarts=0,
             grace_secs=5.0)


@pytest.mark.parametrize("options, keywords, flags", [
    ({"workers": -1}, "workers is -1: expected an integer >= 0",
     "--workers -1 is negative: give 0 or more, e.g. --workers 2"),
    ({"ps": -2}, "ps is -2: expected an integer >= 0",
     "--ps -2 is negative: give 0 or more, e.g. --ps 1"),
    ({"max_restarts": -2}, "max_restarts is -2: expected an integer >= 0",
     "--max-restarts -2 is negative: give 0 or more, e.g. --max-restarts 3"),
    ({"chief": False, "workers": 0},
     "chief=False with workers=0 leaves no training task: keep the chief or use workers >= 1",
     "--no-chief with --workers 0 leaves no training task: drop --no-chief or pass "
     "--workers 1 or more"),
    ({"timeout": 0.0}, "timeout is 0.0: expected seconds > 0",
     "--timeout 0 must be positive: give seconds, e.g. --timeout 600"),
    ({"grace_secs": -1.0}, "grace_secs is -1.0: expected seconds >= 0",
     "--grace -1 is negative: give seconds >= 0, e.g. --grace 5"),
    ({"host": "my host"}, "host is 'my host': expected a host name or IP address, "
     'e.g. "127.0.0.1"', "--host 'my host' is not a host name or IP address, "
     "e.g. --host 127.0.0.1"),
    ({"host": ""}, "host is '': expected a host name or IP address, e.g. \"127.0.0.1\"",
     "--host '' is not a host name or IP address, e.g. --host 127.0.0.1"),
    ({"command": []}, 'command is []: give the program and its arguments as a list, '
     'e.g. ["python", "train.py"]', "no command given: put the program to run after --, "
     "e.g. trainexec launch --workers 2 -- python train.py"),
], ids=["workers", "ps", "max_restarts", "no-training-task", "timeout", "grace", "host",
        "empty-host", "command"])
def test_each_problem_is_told_in_the_callers_words(options, keywords, flags):
    for spelling, words in ((KEYWORDS, keywords), (FLAGS, flags)):
        with pytest.raises(ConfigError) as raised:
            check_options(**{**VALID, **options}, spelling=spelling)
        assert str(raised.value) == words


def test_valid_options_pass_and_the_first_problem_is_told():
    check_options(**VALID, timeout=600.0, host="::1", spelling=FLAGS)
    check_options(**{**VALID, "chief": False})  # worker:0 leads
    with pytest.raises(ConfigError, match=re.escape("workers is -1")):  # counts come first
        check_options(**{**VALID, "command": "python train.py", "workers": -1})


@pytest.mark.parametrize("kwargs, words", [
    ({"workers": -1}, "workers is -1"),
    ({"ps": -2}, "ps is -2"),
    ({"max_restarts": -1}, "max_restarts is -1"),
    ({"grace_secs": -1}, "grace_secs"),
    ({"chief": False, "workers": 0}, "no training task"),
    ({"command": []}, "command is []"),
    ({"command": "python train.py"}, "as a list"),
])
def test_bad_arguments_say_what_is_wrong(kwargs, words):
    kwargs = {"command": role(), **kwargs}
    with pytest.raises(ConfigError, match=re.escape(words)):
        LocalCluster(**kwargs)

def test_wait_for_expands_job_names_to_tasks_in_task_order():
    cluster = LocalCluster(role(), workers=2, ps=1, evaluator=True,
                           wait_for=["evaluator", "worker", "chief:0"])
    assert cluster.primary == ["chief:0", "worker:0", "worker:1", "evaluator:0"]
    cluster = LocalCluster(role(), workers=2, wait_for=("worker:1",))
    assert cluster.primary == ["worker:1"]
    cluster = LocalCluster(role(), ps=2, wait_for=("ps", "chief"))  # a trainexec ps exits
    assert cluster.primary == ["chief:0", "ps:0", "ps:1"]

@pytest.mark.parametrize("wait_for, words", [
    (["worker:3"], "wait_for names 'worker:3', which is not in this cluster: use a task "
                   "(chief:0, worker:0, worker:1, ps:0)"),
    (["evaluator"], "wait_for names 'evaluator', which is not in this cluster"),
    ([], "wait_for is []"),
    ("worker", "wait_for is 'worker': give a list"),
])
def test_bad_wait_for_says_what_is_wrong(wait_for, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        LocalCluster(role(), workers=2, ps=1, wait_for=wait_for)


def test_local_cluster_validates_restart_groups():
    cluster = LocalCluster(["true"], workers=2, restart_groups=["chief,worker"])
    assert cluster.restart_groups == [("chief:0", "worker:0", "worker:1")]
    with pytest.raises(ConfigError, match="restart_groups names 'ps'"):
        LocalCluster(["true"], workers=2, restart_groups=[["chief", "ps"]])


@pytest.mark.parametrize("restart_policy, words", [
    ("onfailure", "restart_policy 'onfailure' is not a restart policy: use one of ExitCode, "
     "OnFailure, Always, Never"),
    ({"workr": "OnFailure"}, "restart_policy names job 'workr', which is not in this "
     "cluster: use one of chief, worker"),
    ({"worker": "Sometimes"}, "restart_policy 'Sometimes' is not a restart policy"),
])
def test_a_bad_restart_policy_is_named_with_the_fix(restart_policy, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        LocalCluster(["python", "train.py"], workers=1, restart_policy=restart_policy)


def test_restart_policies_are_per_task_and_default_to_exit_code():
    cluster = LocalCluster(["python", "train.py"], workers=2, ps=1,
                           restart_policy={"worker": "OnFailure"})
    assert cluster.restart_policies == {"chief:0": "ExitCode", "worker:0": "OnFailure",
                                        "worker:1": "OnFailure", "ps:0": "ExitCode"}
    assert set(LocalCluster(["x"], restart_policy="Never").restart_policies.values()) == {
        "Never"}
