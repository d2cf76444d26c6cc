"""trainexec/keras/faults/restart_rule.py: the restart rule a KerasTrainer task announces
names the task and the strategy it plans, one group shared by every member of an MWMS
job, and survives the trip through the launcher's directory. (Which group each kind of
task gets, cluster by cluster: tests/test_launch_policy.py::
test_keras_tasks_announce_the_group_their_strategy_needs.)"""

import pytest

from trainexec.cluster.config import ClusterConfig
from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV, announce, read_rules
from trainexec.keras.faults.restart_rule import rule_for_plan
from trainexec.keras.strategy import plan_for

pytestmark = pytest.mark.any_line

MWMS_WITH_EVALUATOR = {"chief": ["h:1"], "worker": ["h:2", "h:3"], "evaluator": ["h:9"]}
PSS = {"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4", "h:5"]}


def _cluster(cluster, job, index):
    return ClusterConfig.from_dict({"cluster": cluster, "task": {"type": job, "index": index}})


def _rule(cluster, job, index, keras_3=False, gpus=0):
    return rule_for_plan(plan_for(_cluster(cluster, job, index), keras_3=keras_3, gpus=gpus))


def _tasks(cluster):
    return [f"{job}:{i}" for job, addresses in cluster.items() for i in range(len(addresses))]


@pytest.mark.parametrize("cluster, job, index, strategy", [
    (MWMS_WITH_EVALUATOR, "worker", 1, "multi_worker_mirrored"),
    (MWMS_WITH_EVALUATOR, "evaluator", 0, "default"),  # evaluates undistributed
    (PSS, "ps", 0, "parameter_server"),
    (PSS, "chief", 0, "parameter_server"),
    ({"worker": ["h:1"]}, "worker", 0, "default"),  # one training task: nothing to share
])
def test_a_task_announces_itself_and_the_strategy_it_plans(cluster, job, index, strategy):
    rule = _rule(cluster, job, index)
    assert (rule.task, rule.strategy) == (f"{job}:{index}", strategy)
    assert rule.task in rule.group and rule.ends_by_itself


@pytest.mark.parametrize("gpus, strategy", [(0, "default"), (2, "mirrored")])
def test_a_local_run_restarts_alone_under_its_own_name(gpus, strategy):
    rule = rule_for_plan(plan_for(ClusterConfig(), keras_3=False, gpus=gpus))
    assert (rule.task, rule.group, rule.strategy, rule.carry_on) == (
        "local", ("local",), strategy, False)


def test_every_mwms_training_task_names_the_same_group_and_the_evaluator_stays_out():
    rules = {task: _rule(MWMS_WITH_EVALUATOR, task.split(":")[0],
                         int(task.split(":")[1]))
             for task in _tasks(MWMS_WITH_EVALUATOR)}
    training = ("chief:0", "worker:0", "worker:1")
    assert {rules[task].group for task in training} == {training}
    assert rules["evaluator:0"].group == ("evaluator:0",)


@pytest.mark.parametrize("cluster", [MWMS_WITH_EVALUATOR, PSS], ids=["mwms", "pss"])
def test_trainexecs_own_loop_on_keras_3_restarts_as_model_fit_does(cluster):
    for task in _tasks(cluster):
        job, index = task.split(":")
        assert _rule(cluster, job, int(index), keras_3=True) == _rule(cluster, job, int(index))


def test_what_each_task_announces_the_launcher_reads_back_as_it_was(tmp_path):
    environ = {LAUNCH_DIR_ENV: str(tmp_path)}
    rules = {}
    for task in _tasks(PSS):
        job, index = task.split(":")
        rules[task] = _rule(PSS, job, int(index))
        assert announce(rules[task], environ) == str(tmp_path / task.replace(":", "-")) + ".json"
    assert read_rules(str(tmp_path), _tasks(PSS)) == rules
    assert rules["worker:1"].carry_on and not rules["ps:1"].carry_on
