"""trainexec/launch/policy.py: the launcher's exit and restart decisions, one row per
situation; and the restart group each KerasTrainer task announces for its strategy
(trainexec/keras/faults/restart_rule.py)."""

import pytest

from trainexec.cluster.config import ClusterConfig
from trainexec.keras.strategy import plan_for
from trainexec.launch.policy import (ALL_ENDED, ALWAYS, EXITED, FAIL, FAILED, LEAVE, LEFT,
                                     NEVER, ON_FAILURE, RESTART, RUNNING, STOP, STOPPED,
                                     SUCCEED, WAIT, Decision, JobView, TaskView, decide)
from trainexec.keras.faults.restart_rule import rule_for_plan
from trainexec.contract.restart_announcements import RestartRule

pytestmark = pytest.mark.any_line

MWMS = ("chief:0", "worker:0", "worker:1")


def _tasks(**states):
    """TaskViews from keyword pairs:
    chief_0=(state, code[, charged[, ended_at[, restart_policy]]])."""
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
    # Without a rule a failed task restarts alone (Estimator jobs, as before), when
    # its exit is retryable (170: a peer was lost).
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 170)), {}, 1, {},
     Decision(RESTART, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 170, 1)), {}, 1, {},
     Decision(FAIL, ("worker:0",), "worker:0")),
    # A permanent exit (1-127: the user's error, a bad TF_CONFIG) is not restarted,
    # restarts left or not: the job fails at once, as TFJob's ExitCode policy does.
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 1)), {}, 3, {},
     Decision(FAIL, ("worker:0",), "worker:0", permanent=True)),
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 2)), _mwms_rules(), 3, {},
     Decision(FAIL, ("worker:0",), "worker:0", permanent=True)),
    # OnFailure (and Always) restart any failure; Never none.
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 1, 0, 0.0, ON_FAILURE)), {}, 1, {},
     Decision(RESTART, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 1, 0, 0.0, ALWAYS)), {}, 1, {},
     Decision(RESTART, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, -9, 0, 0.0, NEVER)), {}, 1, {},
     Decision(FAIL, ("worker:0",), "worker:0", permanent=True)),
    # Exits the kernel or TensorFlow report (137 after SIGKILL, 134 abort) are retryable.
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 137)), {}, 1, {},
     Decision(RESTART, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(FAILED, 134), worker_0=(RUNNING, None)), {}, 1, {},
     Decision(RESTART, ("chief:0",), "chief:0")),
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
    # PSS: the chief noticed the killed ps first (170), seen in the same look: one
    # fault, the ps's group restarted once and charged to the ps, whatever the order.
    (_tasks(chief_0=(FAILED, 170, 0, 4.0), worker_0=(RUNNING, None),
            ps_0=(FAILED, -9, 0, 4.1)), PSS_RULES, 1, {},
     Decision(RESTART, ("chief:0", "ps:0"), "ps:0")),
    (_tasks(chief_0=(FAILED, 170, 0, 4.1), worker_0=(RUNNING, None),
            ps_0=(FAILED, -9, 0, 4.0)), PSS_RULES, 1, {},
     Decision(RESTART, ("chief:0", "ps:0"), "ps:0")),
    # ... two ps lost with it: one fault still, both groups restarted once.
    (_tasks(chief_0=(FAILED, 170, 0, 4.0), ps_0=(FAILED, -9, 0, 4.1),
            ps_1=(FAILED, -9, 0, 4.2)),
     {**PSS_RULES, "ps:1": RestartRule("ps:1", ("chief:0", "ps:1"))}, 1, {},
     Decision(RESTART, ("chief:0", "ps:0", "ps:1"), "ps:0")),
    # ... but a failed worker's group does not hold the chief: first come, first served.
    (_tasks(chief_0=(FAILED, 170, 0, 4.0), worker_0=(FAILED, -9, 0, 4.1),
            ps_0=(RUNNING, None)), PSS_RULES, 1, {},
     Decision(RESTART, ("chief:0",), "chief:0")),
    # ... after a preemption (143: it saved) the peers get the grace period.
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 143), worker_1=(RUNNING, None)),
     _mwms_rules(), 1, {}, Decision(RESTART, MWMS, "worker:0", gentle=True)),
    # ... no restarts left: the job fails.
    (_tasks(chief_0=(RUNNING, None), worker_0=(RUNNING, None), worker_1=(FAILED, -9, 1)),
     _mwms_rules(), 1, {}, Decision(FAIL, ("worker:1",), "worker:1")),
    # PSS: a dead worker restarts alone; with no restarts left the job goes on.
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, -9), ps_0=(RUNNING, None)),
     PSS_RULES, 1, {}, Decision(RESTART, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, -9), ps_0=(RUNNING, None)),
     PSS_RULES, 0, {}, Decision(LEAVE, ("worker:0",), "worker:0")),
    (_tasks(chief_0=(RUNNING, None), worker_0=(FAILED, 1), ps_0=(RUNNING, None)),
     PSS_RULES, 2, {}, Decision(LEAVE, ("worker:0",), "worker:0", permanent=True)),
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
     Decision(FAIL, ("worker:0",), "worker:0", permanent=True)),
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
    # A master (SageMaker, TF 1.x) is the chief of its group.
    ("worker", 0, {"master": ["h:1"], "worker": ["h:2"]}, ("master:0", "worker:0"), False),
    ("ps", 0, {"master": ["h:1"], "worker": ["h:2"], "ps": ["h:3"]}, ("ps:0", "master:0"),
     False),
])
def test_keras_tasks_announce_the_group_their_strategy_needs(job, index, cluster, group,
                                                            carry_on):
    rule = rule_for_plan(_plan(job, index, cluster))
    assert (rule.group, rule.carry_on) == (group, carry_on)
    assert rule.ends_by_itself  # every KerasTrainer task exits once training is over


def test_states_and_actions_are_enums_that_read_as_their_words():
    from trainexec.launch import policy
    assert isinstance(policy.RUNNING, policy.TaskState) and policy.EXITED == "exited 0"
    assert isinstance(policy.WAIT, policy.Action) and policy.ALL_ENDED == "all ended"
    assert [s.value for s in policy.TaskState] == [
        "running", "exited 0", "failed", "stopped", "left"]
    assert [a.value for a in policy.Action] == [
        "wait", "restart", "leave", "fail", "succeed", "stop", "all ended"]
