"""The cluster of a Slurm job step (trainexec.cluster.slurm): placement, ports, checks."""

import json

import pytest

from trainexec.cluster.config import ClusterConfig
from trainexec.cluster.slurm import (SlurmStep, expand_hostlist, expand_ports,
                                     expand_tasks_per_node, parse_roles)
from trainexec.cluster.verdicts import SLURM, explain
from trainexec.errors import ConfigError

pytestmark = pytest.mark.tf_line


def step_env(procid, localid, node, roles="chief=1,worker=2,ps=1,evaluator=1",
             nodelist="n[9-11]", per_node="2(x2),1", **extra):
    env = {"TRAINEXEC_SLURM_ROLES": roles, "SLURM_PROCID": str(procid),
           "SLURM_LOCALID": str(localid), "SLURMD_NODENAME": node,
           "SLURM_STEP_NODELIST": nodelist, "SLURM_STEP_TASKS_PER_NODE": per_node}
    env.update(extra)
    return env


@pytest.mark.parametrize("text, hosts", [
    ("n[9-11]", ("n9", "n10", "n11")),               # Slurm's order, not text order
    ("a[01-03,7],b5", ("a01", "a02", "a03", "a7", "b5")),
    ("n11,n9,n10", ("n11", "n9", "n10")),            # as given: never sorted
    ("node1", ("node1",)),
    ("r[1-2]n[8-9]", ("r1n8", "r1n9", "r2n8", "r2n9")),
])
def test_host_lists_expand_in_slurms_order(text, hosts):
    assert expand_hostlist(text) == hosts


# (parse, text, the variable the message names, the words that say what to fix)
BAD_INPUT = [
    (expand_hostlist, "n[9-11", "SLURM_STEP_NODELIST", "not a Slurm host list"),
    (expand_hostlist, "n[x-2]", "SLURM_STEP_NODELIST", "not a list of numbers"),
    (expand_hostlist, "n[5-3]", "SLURM_STEP_NODELIST", "runs backwards"),
    (parse_roles, "chief=1,master=1", "TRAINEXEC_SLURM_ROLES",
     "ROLE one of chief, worker, ps, evaluator"),
    (parse_roles, "chief=2", "TRAINEXEC_SLURM_ROLES", "at most one chief"),
    (parse_roles, "worker=two", "TRAINEXEC_SLURM_ROLES", "not a task count"),
    (parse_roles, "chief=1,chief=1", "TRAINEXEC_SLURM_ROLES", "twice"),
    (parse_roles, "ps=1,evaluator=1", "TRAINEXEC_SLURM_ROLES", "nothing trains"),
]


@pytest.mark.parametrize("parse, text, variable, words", BAD_INPUT,
                         ids=[f"{row[0].__name__}-{row[1]}" for row in BAD_INPUT])
def test_bad_host_lists_and_roles_are_named_with_the_fix(parse, text, variable, words):
    with pytest.raises(ConfigError, match=variable) as err:
        parse(text)
    assert words in str(err.value)


def test_tasks_per_node_and_ports_expand():
    assert expand_tasks_per_node("2(x3),1") == (2, 2, 2, 1)
    assert expand_ports("21001-21003,21010") == (21001, 21002, 21003, 21010)


def test_roles_take_trainexecs_order_not_the_written_or_alphabetical_one():
    # TF's SlurmClusterResolver sorts job names: rank 1 would be the ps.
    assert parse_roles("ps=1,worker=2,chief=1") == (("chief", 1), ("worker", 2), ("ps", 1))


# chief=1,worker=2,ps=1,evaluator=1 on n9 (2 tasks), n10 (2), n11 (1), block distribution.
@pytest.mark.parametrize("procid, localid, node, task, address", [
    (0, 0, "n9", ("chief", 0), "n9:2222"),
    (1, 1, "n9", ("worker", 0), "n9:2223"),
    (2, 0, "n10", ("worker", 1), "n10:2222"),
    (3, 1, "n10", ("ps", 0), "n10:2223"),
    (4, 0, "n11", ("evaluator", 0), "n11:2222"),
])
def test_every_rank_gets_its_role_and_its_own_nodes_address(procid, localid, node, task,
                                                            address):
    config = ClusterConfig.from_env(step_env(procid, localid, node))
    assert (config.task_type, config.task_index) == task
    assert config.task_address == address
    assert dict(config.cluster) == {"chief": ("n9:2222",), "worker": ("n9:2223", "n10:2222"),
                                    "ps": ("n10:2223",), "evaluator": ("n11:2222",)}


def test_reserved_ports_are_used_when_slurm_reserved_them():
    config = ClusterConfig.from_env(step_env(3, 1, "n10", SLURM_STEP_RESV_PORTS="21001-21003"))
    assert config.task_address == "n10:21002"
    assert config.cluster["chief"] == ("n9:21001",)


def test_the_base_port_is_configurable():
    config = ClusterConfig.from_env(step_env(0, 0, "n9", TRAINEXEC_SLURM_PORT="3000"))
    assert config.cluster["worker"] == ("n9:3001", "n10:3000")


def test_a_cyclic_step_is_refused_naming_the_distribution_and_the_fix():
    # Cyclic: rank 1 runs on n10 as local task 0; block would put it on n9 as task 1.
    env = step_env(1, 0, "n10", SLURM_DISTRIBUTION="cyclic")
    with pytest.raises(ConfigError) as err:
        ClusterConfig.from_env(env)
    message = str(err.value)
    assert "SLURM_DISTRIBUTION=cyclic" in message and "--distribution=block" in message
    assert "on n10 as local task 0" in message and "on n9 as local task 1" in message


@pytest.mark.parametrize("change, words", [
    ({"SLURM_STEP_NUM_TASKS": "4"}, "--ntasks=5"),
    ({"SLURM_STEP_TASKS_PER_NODE": "2,2"}, "counts 2 nodes but SLURM_STEP_NODELIST"),
    ({"SLURM_PROCID": ""}, "SLURM_PROCID is not"),
    ({"SLURM_STEP_RESV_PORTS": "21001"}, "reserves 1 ports per node"),
])
def test_a_step_that_cannot_be_placed_is_a_config_error(change, words):
    env = {**step_env(0, 0, "n9"), **change}
    with pytest.raises(ConfigError) as err:
        ClusterConfig.from_env(env)
    assert words in str(err.value)


def test_without_the_roles_variable_nothing_slurm_related_happens():
    env = step_env(1, 0, "n10")
    del env["TRAINEXEC_SLURM_ROLES"]
    assert SlurmStep.from_env(env) is None
    assert not ClusterConfig.from_env(env).is_distributed


def test_tf_config_wins_over_the_slurm_step():
    tf_config = {"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}}
    config = ClusterConfig.from_env({**step_env(0, 0, "n9"), "TF_CONFIG": json.dumps(tf_config)})
    assert dict(config.cluster) == {"worker": ("h:1",)}


def test_tfconfig_names_the_slurm_shape():
    text = explain(ClusterConfig.from_env(step_env(2, 0, "n10")), slurm=True)
    assert f"recognised shape: {SLURM}" in text
    assert "worker:1     n10:2222   <- this task" in text


def test_the_executor_takes_its_role_from_the_step(monkeypatch):
    from fakes import FakeTrainer

    from trainexec.executor import TrainingExecutor
    from trainexec.specs import EvalSpec, TrainSpec

    monkeypatch.delenv("TF_CONFIG", raising=False)
    for name, value in step_env(2, 0, "n10").items():
        monkeypatch.setenv(name, value)
    trainer = FakeTrainer()
    executor = TrainingExecutor(trainer, TrainSpec(lambda: None, max_steps=1),
                                EvalSpec(lambda: None))
    assert executor.cluster.task_name == "worker:1"
    assert executor.plan().task == "worker:1"


def test_the_keras_strategy_plan_takes_its_cluster_from_the_step(monkeypatch):
    from trainexec.keras.strategy import MULTI_WORKER_MIRRORED, plan_for

    env = step_env(1, 1, "n9", roles="chief=1,worker=2,evaluator=1", per_node="2,1,1")
    plan = plan_for(ClusterConfig.from_env(env), keras_3=True, gpus=0)
    assert plan.kind == MULTI_WORKER_MIRRORED and plan.cluster.task_name == "worker:0"
