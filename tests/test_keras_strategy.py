"""trainexec/keras_strategy.py: which strategy a Keras task uses and what it does, and the
cluster tf.distribute is given (a master as the chief)."""

import pytest

from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.keras.strategy import (COORDINATE, DEFAULT, EVALUATE, MIRRORED,
                                      MULTI_WORKER_MIRRORED, PARAMETER_SERVER, SERVE, TRAIN,
                                      StrategyPlan, cluster_resolver, distribute_cluster,
                                      make_strategy, plan_for)
from tf_configs import SAGEMAKER_PS, tfjob_dynamic_view

pytestmark = pytest.mark.tf_line

MWMS = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]}
WORKERS_ONLY = {"worker": ["h1:1", "h2:1"]}
PSS = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"], "ps": ["h3:1"]}
LONE_CHIEF = {"chief": ["h0:1"]}
MASTER_MWMS = {"master": ["h0:1"], "worker": ["h1:1"]}


def config(cluster=None, task=None):
    data = {}
    if cluster is not None:
        data["cluster"] = cluster
    if task is not None:
        job, index = task.split(":")
        data["task"] = {"type": job, "index": int(index)}
    return ClusterConfig.from_dict(data)


# (cluster, task, keras_3, gpus) -> (kind, action, is_chief, is_local)
PLANS = [
    pytest.param(None, None, False, 0, (DEFAULT, TRAIN, True, True), id="local"),
    pytest.param(None, None, False, 1, (DEFAULT, TRAIN, True, True), id="local-1-gpu"),
    pytest.param(None, None, False, 2, (MIRRORED, TRAIN, True, True), id="local-2-gpus"),
    pytest.param(None, None, True, 0, (DEFAULT, TRAIN, True, True), id="local-keras-3"),
    pytest.param(None, None, True, 4, (MIRRORED, TRAIN, True, True), id="local-keras-3-gpus"),
    pytest.param(MWMS, "chief:0", False, 0, (MULTI_WORKER_MIRRORED, TRAIN, True, False),
                 id="mwms-chief"),
    pytest.param(MWMS, "worker:0", False, 0, (MULTI_WORKER_MIRRORED, TRAIN, False, False),
                 id="mwms-worker-0-beside-a-chief"),
    pytest.param(MWMS, "worker:1", False, 2, (MULTI_WORKER_MIRRORED, TRAIN, False, False),
                 id="mwms-worker-with-gpus"),
    pytest.param(WORKERS_ONLY, "worker:0", False, 0,
                 (MULTI_WORKER_MIRRORED, TRAIN, True, False), id="workers-only-worker-0-chief"),
    pytest.param(WORKERS_ONLY, "worker:1", False, 0,
                 (MULTI_WORKER_MIRRORED, TRAIN, False, False), id="workers-only-worker-1"),
    pytest.param({**MWMS, "evaluator": ["h9:1"]}, "evaluator:0", False, 2,
                 (DEFAULT, EVALUATE, False, False), id="mwms-evaluator"),
    pytest.param({**MWMS, "evaluator": ["h9:1"]}, "worker:1", False, 0,
                 (MULTI_WORKER_MIRRORED, TRAIN, False, False), id="mwms-listing-an-evaluator"),
    pytest.param(PSS, "chief:0", False, 0, (PARAMETER_SERVER, COORDINATE, True, False),
                 id="pss-chief"),
    pytest.param(PSS, "worker:1", False, 0, (PARAMETER_SERVER, SERVE, False, False),
                 id="pss-worker"),
    pytest.param(PSS, "ps:0", False, 0, (PARAMETER_SERVER, SERVE, False, False), id="pss-ps"),
    pytest.param(PSS, "evaluator:0", False, 0, (DEFAULT, EVALUATE, False, False),
                 id="pss-evaluator-outside-the-cluster"),
    pytest.param(LONE_CHIEF, "chief:0", False, 0, (DEFAULT, TRAIN, True, False),
                 id="lone-chief"),
    pytest.param(LONE_CHIEF, "chief:0", True, 0, (DEFAULT, TRAIN, True, False),
                 id="lone-chief-keras-3"),
    pytest.param(LONE_CHIEF, "chief:0", False, 2, (MIRRORED, TRAIN, True, False),
                 id="lone-chief-gpus"),
    pytest.param({"worker": ["h1:1"]}, "worker:0", False, 0, (DEFAULT, TRAIN, True, False),
                 id="lone-worker"),
    pytest.param({**LONE_CHIEF, "evaluator": ["h9:1"]}, "evaluator:0", True, 0,
                 (DEFAULT, EVALUATE, False, False), id="lone-chief-evaluator-keras-3"),
    pytest.param(None, "evaluator:0", False, 0, (DEFAULT, EVALUATE, False, False),
                 id="evaluator-without-cluster"),
] + [
    # A master, as SageMaker and TF 1.x write it, plans as the chief would: with ps it
    # coordinates ParameterServerStrategy; without, MultiWorkerMirroredStrategy (the
    # same rename: every task's resolver calls the master "chief"). (cluster, task,
    # kind, action, is_chief), on Keras 2 without GPUs, a cluster task.
    pytest.param(cluster, task, False, 0, (kind, action, chief, False), id=name)
    for name, cluster, task, kind, action, chief in (
        ("sagemaker-ps-master", SAGEMAKER_PS, "master:0", PARAMETER_SERVER, COORDINATE, True),
        ("sagemaker-ps-worker", SAGEMAKER_PS, "worker:0", PARAMETER_SERVER, SERVE, False),
        ("sagemaker-ps-ps", SAGEMAKER_PS, "ps:1", PARAMETER_SERVER, SERVE, False),
        ("master-mwms-master", MASTER_MWMS, "master:0", MULTI_WORKER_MIRRORED, TRAIN, True),
        ("master-mwms-worker-0", MASTER_MWMS, "worker:0", MULTI_WORKER_MIRRORED, TRAIN,
         False),
    )
]


@pytest.mark.parametrize("cluster, task, keras_3, gpus, expected", PLANS)
def test_plan_for(cluster, task, keras_3, gpus, expected):
    cfg = config(cluster, task)
    plan = plan_for(cfg, keras_3=keras_3, gpus=gpus)
    assert (plan.kind, plan.action, plan.is_chief, plan.is_local) == expected
    assert plan.cluster == cfg
    assert plan.runs_fit == (plan.action in (TRAIN, COORDINATE))


# On Keras 3 (whose model.fit cannot train under MWMS or PSS) the tasks that train a cluster
# use trainexec's own loop; serving tasks, the evaluator and single-process runs do not.
# (cluster, task) -> (kind, action, own_loop), on Keras 3 without GPUs.
KERAS_3_PLANS = [
    pytest.param(MWMS, "chief:0", (MULTI_WORKER_MIRRORED, TRAIN, True), id="mwms-chief"),
    pytest.param(MWMS, "worker:1", (MULTI_WORKER_MIRRORED, TRAIN, True), id="mwms-worker"),
    pytest.param(WORKERS_ONLY, "worker:0", (MULTI_WORKER_MIRRORED, TRAIN, True),
                 id="workers-only"),
    pytest.param(MASTER_MWMS, "master:0", (MULTI_WORKER_MIRRORED, TRAIN, True),
                 id="master-mwms"),
    pytest.param(PSS, "chief:0", (PARAMETER_SERVER, COORDINATE, True), id="pss-chief"),
    pytest.param(SAGEMAKER_PS, "master:0", (PARAMETER_SERVER, COORDINATE, True),
                 id="sagemaker-ps-master"),
    pytest.param(PSS, "worker:0", (PARAMETER_SERVER, SERVE, False), id="pss-worker"),
    pytest.param(PSS, "ps:0", (PARAMETER_SERVER, SERVE, False), id="pss-ps"),
    pytest.param({**MWMS, "evaluator": ["h9:1"]}, "evaluator:0", (DEFAULT, EVALUATE, False),
                 id="mwms-evaluator"),
    pytest.param(LONE_CHIEF, "chief:0", (DEFAULT, TRAIN, False), id="lone-chief"),
    pytest.param(None, None, (DEFAULT, TRAIN, False), id="local"),
]


@pytest.mark.parametrize("cluster, task, expected", KERAS_3_PLANS)
def test_keras_3_trains_a_cluster_with_trainexecs_loop(cluster, task, expected):
    plan = plan_for(config(cluster, task), keras_3=True, gpus=0)
    assert (plan.kind, plan.action, plan.own_loop) == expected
    assert ("trainexec's loop for Keras 3" in plan.describe()) == plan.own_loop
    # The same cluster on Keras 2 plans alike, with model.fit.
    keras_2 = plan_for(config(cluster, task), keras_3=False, gpus=0)
    assert (keras_2.kind, keras_2.action, keras_2.own_loop) == (*expected[:2], False)


# (cluster, task, keras_3) -> words the ConfigError must say
REFUSED = [
    pytest.param({"master": ["h0:1"], "ps": ["h3:1"]}, "master:0", False,
                 ("ParameterServerStrategy", "at least one worker"),
                 id="master-ps-without-workers"),
    pytest.param({"worker": ["h1:1"], "ps": ["h3:1"]}, "worker:0", False,
                 ("ParameterServerStrategy", 'needs a "chief"'), id="ps-without-chief"),
    pytest.param({"chief": ["h0:1"], "ps": ["h3:1"]}, "ps:0", False,
                 ("ParameterServerStrategy", "at least one worker"), id="ps-without-workers"),
]


@pytest.mark.parametrize("cluster, task, keras_3, words", REFUSED)
def test_plan_for_refuses(cluster, task, keras_3, words):
    with pytest.raises(ConfigError) as raised:
        plan_for(config(cluster, task), keras_3=keras_3, gpus=0)
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


@pytest.mark.parametrize("task", ["worker:1", "ps:1", "ps:0"])
def test_plan_for_refuses_every_task_of_a_tfjob_with_dynamic_workers(task):
    """Their chief has no cluster (it fails parsing): the workers and ps fail too, at
    once, instead of serving a chief that never comes."""
    job, index = task.split(":")
    with pytest.raises(ConfigError) as raised:
        plan_for(ClusterConfig.from_json(tfjob_dynamic_view(job, int(index))),
                 keras_3=False, gpus=0)
    assert f"KerasTrainer cannot train this TF_CONFIG cluster ({task})" in str(raised.value)
    assert "set enableDynamicWorker: false (or leave it out)" in str(raised.value)


# What tf.distribute is given: (cluster, task) -> (cluster spec jobs, task type).
DISTRIBUTED = [
    pytest.param(SAGEMAKER_PS, "master:0", ({"chief": ["algo-1:2222"], "worker": ["algo-2:2222"],
                                             "ps": ["algo-1:2223", "algo-2:2223"]}, "chief"),
                 id="sagemaker-master-as-chief"),
    pytest.param(SAGEMAKER_PS, "ps:1", ({"chief": ["algo-1:2222"], "worker": ["algo-2:2222"],
                                         "ps": ["algo-1:2223", "algo-2:2223"]}, "ps"),
                 id="sagemaker-ps-sees-a-chief"),
    pytest.param(MASTER_MWMS, "worker:0", ({"chief": ["h0:1"], "worker": ["h1:1"]}, "worker"),
                 id="master-mwms-worker"),
    pytest.param({**PSS, "evaluator": ["h9:1"]}, "chief:0", (PSS, "chief"),
                 id="chief-as-given-evaluator-left-out"),
    pytest.param({"worker": {"1": "h1:1"}, "ps": ["h3:1"]}, "worker:1",
                 ({"worker": {1: "h1:1"}, "ps": ["h3:1"]}, "worker"), id="sparse-job"),
]


@pytest.mark.parametrize("cluster, task, expected", DISTRIBUTED)
def test_distribute_cluster_and_resolver(cluster, task, expected):
    cfg = config(cluster, task)
    assert distribute_cluster(cfg) == expected
    resolver = cluster_resolver(cfg)
    jobs, task_type = expected
    assert resolver.cluster_spec().as_dict() == jobs
    assert (resolver.task_type, resolver.task_id) == (task_type, cfg.task_index)
    assert resolver.rpc_layer == "grpc"


def test_describe_names_task_action_and_strategy():
    plan = plan_for(config(PSS, "chief:0"), keras_3=False, gpus=0)
    assert plan.describe() == ("chief:0 coordinates training and writes checkpoints "
                               "(strategy: parameter_server)")
    plan = plan_for(config(PSS, "ps:0"), keras_3=False, gpus=0)
    assert plan.describe() == "ps:0 serves variables and steps (strategy: parameter_server)"


def test_make_strategy_for_local_and_evaluator_is_the_default_one():
    import tensorflow as tf

    for plan in (plan_for(config(), keras_3=False, gpus=0),
                 plan_for(config(MWMS, "evaluator:0"), keras_3=False, gpus=0)):
        strategy = make_strategy(plan)
        assert strategy is tf.distribute.get_strategy()
        assert not tf.distribute.has_strategy()


def test_make_strategy_mirrored():
    import tensorflow as tf

    strategy = make_strategy(StrategyPlan(MIRRORED, TRAIN, config(), True, True))
    assert isinstance(strategy, tf.distribute.MirroredStrategy)
    assert strategy.num_replicas_in_sync >= 1


def test_a_serving_task_has_no_strategy():
    plan = plan_for(config(PSS, "worker:0"), keras_3=False, gpus=0)
    with pytest.raises(ValueError, match="worker:0 only serves"):
        make_strategy(plan)
