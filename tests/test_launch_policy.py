"""trainexec/launch/policy.py: the launcher's exit and restart decisions, one row per
situation; and trainexec/launch/restart_groups.py: what tasks announce and how the
launcher reads it."""

import json

import pytest

from trainexec.cluster import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.keras.strategy import plan_for
from trainexec.launch import LocalCluster
from trainexec.launch.policy import (ALL_ENDED, EXITED, FAIL, FAILED, LEAVE, LEFT, RESTART,
                                     RUNNING, STOP, STOPPED, SUCCEED, WAIT, Decision,
                                     JobView, TaskView, decide)
from trainexec.keras.restart_rule import rule_for_plan
from trainexec.launch.restart_announcements import (LAUNCH_DIR_ENV, RestartRule, announce,
                                                    read_rules)
from trainexec.launch.restart_groups import merge_rules, parse_group_flag

MWMS = ("chief:0", "worker:0", "worker:1")


def _tasks(**states):
    """TaskViews from keyword pairs: chief_0=(state, code[, charged[, ended_at]])."""
    views = []
    for key, value in states.items():
        name = key.replace("_", ":", 1)
        state, code, *rest = value
        views.append(TaskView(name, state, code, *rest))
    return tuple(views)


def _mwms_rules(carry_on=False):
    return {name: RestartRule(name, MWMS, carry_on) for name in MWMS}


PSS_RULES = {
    "chief:0": RestartRule("chief:0", ("chief:0",)),
    "worker:0": RestartRule("worker:0", ("worker:0",), carry_on=True),
    "ps:0": RestartRule("ps:0", ("chief:0", "ps:0")),
}


@pytest.mark.parametrize("tasks, rules, max_restarts, flags, expected", [
    # Nothing happened yet.
    (_tasks(chief_0=(RUNNING, None), worker_0=(RUNNING, None)), {}, 0, {},
     Decision(WAIT)),
    # Without a rule a failed task restarts alone (Estimator jobs, as before).
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 3)), {}, 1, {},
     Decision(RESTART, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 3, 1)), {}, 1, {},
     Decision(FAIL, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, -9)), {}, 0, {},
     Decision(FAIL, ("worker:0",), "worker:0")),
    # MWMS: a killed worker brings back the whole training group, killed at once.
    (_tasks(chief_0=(RUNNING, None), worker_0=(RUNNING, None), worker_1=(FAILED, -9),
            evaluator_0=(RUNNING, None)), _mwms_rules(), 1, {},
     Decision(RESTART, MWMS, "worker:1", gentle=False)),
    # ... one restart however many peers failed with it: charged to the first.
    (_tasks(chief_0=(FAILED, 1, 0, 5.0), worker_0=(RUNNING, None),
            worker_1=(FAILED, -9, 0, 4.0)), _mwms_rules(), 1, {},
     Decision(RESTART, MWMS, "worker:1")),
    # ... after a preemption (75: it saved) the peers get the grace period.
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 75), worker_1=(RUNNING, None)),
     _mwms_rules(), 1, {}, Decision(RESTART, MWMS, "worker:0", gentle=True)),
    # ... no restarts left: the job fails.
    (_tasks(chief_0=(RUNNING, None), worker_0=(RUNNING, None), worker_1=(FAILED, -9, 1)),
     _mwms_rules(), 1, {}, Decision(FAIL, ("worker:1",), "worker:1")),
    # PSS: a dead worker restarts alone; with no restarts left the job goes on.
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, -9), ps_0=(RUNNING, None)),
     PSS_RULES, 1, {}, Decision(RESTART, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, -9), ps_0=(RUNNING, None)),
     PSS_RULES, 0, {}, Decision(LEAVE, ("worker:0",), "worker:0")),
    # ... a dead ps brings the chief back with it.
    (_tasks(chief_0=(RUNNING, None), worker_0=(RUNNING, None), ps_0=(FAILED, -9)),
     PSS_RULES, 2, {}, Decision(RESTART, ("chief:0", "ps:0"), "ps:0")),
    # A left worker is not a failure any more; the chief finishing is success.
    (_tasks(chief_0=(EXITED, 0), worker_0=(LEFT, -9), ps_0=(RUNNING, None)),
     PSS_RULES, 0, {}, Decision(SUCCEED)),
    # Success needs every primary; stopped tasks are not failures.
    (_tasks(chief_0=(EXITED, 0), worker_0=(STOPPED, -15), evaluator_0=(RUNNING, None)),
     {}, 0, {"primaries": ("chief:0", "evaluator:0")}, Decision(WAIT)),
    (_tasks(chief_0=(EXITED, 0), worker_0=(STOPPED, -15), evaluator_0=(EXITED, 0)),
     {}, 0, {"primaries": ("chief:0", "evaluator:0")}, Decision(SUCCEED)),
    # Tasks that announced they end by themselves (KerasTrainer's) are waited for once
    # the primaries are done; at the deadline or on an interrupt the job still succeeds.
    (_tasks(chief_0=(EXITED, 0), worker_0=(RUNNING, None), evaluator_0=(EXITED, 0)),
     {}, 0, {"primaries": ("chief:0", "evaluator:0"), "ending": ("worker:0",)},
     Decision(WAIT)),
    (_tasks(chief_0=(EXITED, 0), worker_0=(EXITED, 0), evaluator_0=(EXITED, 0)),
     {}, 0, {"primaries": ("chief:0", "evaluator:0"), "ending": ("worker:0",)},
     Decision(SUCCEED)),
    (_tasks(chief_0=(EXITED, 0), worker_0=(RUNNING, None), evaluator_0=(EXITED, 0)),
     {}, 0, {"primaries": ("chief:0", "evaluator:0"), "ending": ("worker:0",),
             "timed_out": True}, Decision(SUCCEED)),
    # A failure is decided before success, interrupts and timeouts.
    (_tasks(chief_0=(EXITED, 0), worker_0=(FAILED, 2)), {}, 0, {"interrupted": True},
     Decision(FAIL, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(RUNNING, None)), {}, 0, {"interrupted": True}, Decision(STOP)),
    (_tasks(chief_0=(RUNNING, None)), {}, 0, {"timed_out": True}, Decision(STOP)),
    (_tasks(chief_0=(STOPPED, -15), worker_0=(EXITED, 0)), {}, 0, {},
     Decision(ALL_ENDED, ("chief:0",))),
])
def test_decide(tasks, rules, max_restarts, flags, expected):
    flags = dict(flags)
    view = JobView(tasks=tasks, primaries=flags.pop("primaries", ("chief:0",)),
                   max_restarts=max_restarts, rules=rules, **flags)
    assert decide(view) == expected


def _plan(job, index, cluster):
    return plan_for(ClusterConfig.from_dict({"cluster": cluster,
                                             "task": {"type": job, "index": index}}),
                    keras_3=False, gpus=0)


MWMS_CLUSTER = {"chief": ["h:1"], "worker": ["h:2", "h:3"]}
PSS_CLUSTER = {"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4", "h:5"]}


@pytest.mark.parametrize("job, index, cluster, group, carry_on", [
    ("worker", 1, MWMS_CLUSTER, MWMS, False),
    ("chief", 0, MWMS_CLUSTER, MWMS, False),
    ("worker", 1, {"worker": ["h:2", "h:3"]}, ("worker:0", "worker:1"), False),
    ("worker", 1, PSS_CLUSTER, ("worker:1",), True),
    ("ps", 1, PSS_CLUSTER, ("ps:1", "chief:0"), False),
    ("chief", 0, PSS_CLUSTER, ("chief:0",), False),
    ("evaluator", 0, MWMS_CLUSTER, ("evaluator:0",), False),
    ("chief", 0, {"chief": ["h:1"]}, ("chief:0",), False),
])
def test_keras_tasks_announce_the_group_their_strategy_needs(job, index, cluster, group,
                                                            carry_on):
    rule = rule_for_plan(_plan(job, index, cluster))
    assert (rule.group, rule.carry_on) == (group, carry_on)
    assert rule.ends_by_itself  # every KerasTrainer task exits once training is over


def test_announced_rules_are_read_back_and_merged_with_flag_groups(tmp_path):
    names = ["chief:0", "worker:0", "worker:1", "ps:0", "evaluator:0"]
    env = {LAUNCH_DIR_ENV: str(tmp_path)}
    path = announce(RestartRule("worker:1", ("worker:1",), carry_on=True,
                                strategy="parameter_server", ends_by_itself=True), env)
    assert json.loads(open(path).read())["restart_group"] == ["worker:1"]
    assert announce(RestartRule("chief:0", ("chief:0",)), {}) is None  # no launcher
    (tmp_path / "ps-0.json").write_text("{half written")
    rules = read_rules(str(tmp_path), names)
    assert set(rules) == {"worker:1"}  # the broken file counts as no announcement
    merged = merge_rules(rules, [("chief:0", "ps:0")], names)
    assert merged["worker:1"].carry_on and merged["worker:1"].group == ("worker:1",)
    assert rules["worker:1"].ends_by_itself and merged["worker:1"].ends_by_itself
    assert merged["ps:0"].group == merged["chief:0"].group == ("chief:0", "ps:0")
    assert "worker:0" not in merged and "evaluator:0" not in merged


@pytest.mark.parametrize("value, words", [
    ("", ("names no task", "chief,worker")),
    ("chief,trainer", ("'trainer'", "not in this cluster", "worker:1")),
])
def test_restart_group_flag_rejects(value, words):
    with pytest.raises(ValueError) as raised:
        parse_group_flag(value, ["chief:0", "worker:0", "worker:1"])
    for word in words:
        assert word in str(raised.value)


def test_restart_group_flag_expands_jobs_in_task_order():
    assert parse_group_flag("worker, chief:0", ["chief:0", "worker:0", "worker:1", "ps:0"]) \
        == ("chief:0", "worker:0", "worker:1")


def test_local_cluster_validates_restart_groups():
    cluster = LocalCluster(["true"], workers=2, restart_groups=["chief,worker"])
    assert cluster.restart_groups == [("chief:0", "worker:0", "worker:1")]
    with pytest.raises(ConfigError, match="restart_groups names 'ps'"):
        LocalCluster(["true"], workers=2, restart_groups=[["chief", "ps"]])
