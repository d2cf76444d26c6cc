"""trainexec/cluster/config.py: ClusterConfig's facts for valid layouts, hashing, the normalised
TF_CONFIG. Malformed TF_CONFIGs are tests/test_cluster_parsing.py."""

import dataclasses
import json

import pytest

from trainexec import ClusterConfig
from tf_configs import (CLUSTER, SAGEMAKER_PS, TFJOB, TFJOB_DYNAMIC_PS,
                        TFJOB_MASTER_EVALUATOR, TFJOB_NO_WORKERS, TFJOB_TWO_EVALUATORS, H,
                        tf_config, tfjob_address, tfjob_dynamic_view)

pytestmark = pytest.mark.any_line


def test_no_tf_config_is_local():
    config = ClusterConfig.from_env({})
    assert config.role == "local"
    assert not config.is_distributed
    assert config.is_chief and config.num_workers == 1

def test_worker_facts():
    config = ClusterConfig.from_env({"TF_CONFIG": tf_config("worker", 1)})
    assert (config.task_type, config.task_index) == ("worker", 1)
    assert config.cluster["worker"] == ("h1:2222", "h2:2222")
    assert config.is_distributed and not config.is_chief
    assert config.num_workers == 3 and config.num_ps == 1
    assert config.task_address == "h2:2222"
    assert config.rpc_layer == "grpc"

def test_chief_and_evaluator_outside_cluster():
    chief = ClusterConfig.from_json(tf_config("chief", 0))
    assert chief.is_chief
    evaluator = ClusterConfig.from_json(tf_config("evaluator", 0))
    assert evaluator.role == "evaluator" and not evaluator.is_chief
    assert evaluator.task_address is None
    assert "evaluator" not in evaluator.training_cluster

def test_worker_zero_is_chief_without_chief_job():
    config = ClusterConfig.from_json(tf_config("worker", 0, {"worker": ["a:1", "b:2"]}))
    assert config.is_chief and not config.has_chief

def test_environment_and_round_trip():
    text = tf_config("ps", 0, environment="google")
    config = ClusterConfig.from_json(text)
    assert config.is_google_environment
    assert ClusterConfig.from_json(config.to_json()) == config
    other = config.for_task("worker", 1)
    assert other.task_address == "h2:2222" and other.cluster == config.cluster

def test_ipv6_address_accepted():
    config = ClusterConfig.from_json(tf_config("chief", 0, {"chief": ["[::1]:2222"]}))
    assert config.task_address == "[::1]:2222" and config.is_single_node


# TF_CONFIGs real cluster managers write, which TensorFlow trains with: every row
# names a task that runs, and what it knows about its cluster.
SHAPES = [
    pytest.param({"chief": [H[0]], "worker": []}, "chief", 0, dict(
        jobs=["chief"], empty_jobs=("worker",), training_tasks=("chief:0",), is_chief=True,
        is_single_node=False), id="tfjob-0-workers-chief-alone"),
    pytest.param(TFJOB_NO_WORKERS, "chief", 0, dict(
        jobs=["chief", "ps"], empty_jobs=("evaluator", "worker"),
        training_tasks=("chief:0",), is_chief=True, num_ps=1), id="tfjob-0-workers-chief"),
    pytest.param(TFJOB_NO_WORKERS, "ps", 0, dict(
        jobs=["chief", "ps"], training_tasks=("chief:0",), task_address=H[1]),
        id="tfjob-0-workers-ps"),
    pytest.param(TFJOB_NO_WORKERS, "evaluator", 0, dict(
        role="evaluator", task_address=None, is_chief=False), id="tfjob-0-evaluators"),
    pytest.param(TFJOB_MASTER_EVALUATOR, "master", 0, dict(
        is_chief=True, training_tasks=("master:0", "worker:0"), num_ps=1,
        training_jobs=["master", "worker", "ps"]), id="tfjob-master-evaluator-master"),
    pytest.param(TFJOB_MASTER_EVALUATOR, "worker", 0, dict(
        is_chief=False, task_address=H[1]), id="tfjob-master-evaluator-worker"),
    pytest.param(TFJOB_MASTER_EVALUATOR, "ps", 0, dict(task_address=H[2]),
                 id="tfjob-master-evaluator-ps"),
    pytest.param({"master": [H[0]], "evaluator": [H[3]]}, "master", 0, dict(
        is_single_node=False, training_jobs=["master"]), id="master-evaluator-only"),
    pytest.param(TFJOB_TWO_EVALUATORS, "chief", 0, dict(
        is_chief=True, training_tasks=("chief:0", "worker:0"),
        training_jobs=["chief", "worker"]), id="tfjob-2-evaluators-chief"),
    pytest.param(TFJOB_TWO_EVALUATORS, "worker", 0, dict(is_chief=False),
                 id="tfjob-2-evaluators-worker"),
    pytest.param(TFJOB_TWO_EVALUATORS, "evaluator", 0, dict(task_address=H[3]),
                 id="tfjob-2-evaluators-evaluator-0"),
    pytest.param(TFJOB, "evaluator", 0, dict(
        jobs=["chief", "worker", "ps", "evaluator"], training_jobs=["chief", "worker", "ps"],
        task_address=tfjob_address("evaluator", 0), sparse_jobs={}), id="tfjob-evaluator"),
    # SageMaker's parameter-server mode: a master coordinates; every task parses as given.
    pytest.param(SAGEMAKER_PS, "master", 0, dict(
        is_chief=True, training_tasks=("master:0", "worker:0"), num_ps=2,
        task_address="algo-1:2222", is_single_node=False), id="sagemaker-ps-master"),
    pytest.param(SAGEMAKER_PS, "ps", 1, dict(is_chief=False, task_address="algo-2:2223"),
                 id="sagemaker-ps-ps-1"),
    pytest.param(SAGEMAKER_PS, "worker", 0, dict(is_chief=False, task_address="algo-2:2222"),
                 id="sagemaker-ps-worker"),
]


@pytest.mark.parametrize("cluster,task_type,index,facts", SHAPES)
def test_cluster_manager_shapes_parse_for_every_task_that_runs(cluster, task_type, index,
                                                               facts):
    config = ClusterConfig.from_env({"TF_CONFIG": tf_config(task_type, index, cluster)})
    seen = dict(jobs=list(config.cluster), training_jobs=list(config.training_cluster))
    seen.update((name, getattr(config, name)) for name in facts if name not in seen)
    assert {name: seen[name] for name in facts} == facts
    assert config.task_name == f"{task_type}:{index}"

def test_configs_are_hashable_and_compare_by_value():
    config = ClusterConfig.from_json(tf_config("worker", 1))
    reordered = ClusterConfig.from_json(tf_config("worker", 1, dict(reversed(CLUSTER.items()))))
    built = ClusterConfig(cluster={job: list(a) for job, a in CLUSTER.items()},
                          task_type="worker", task_index=1)
    assert config == reordered == built
    assert hash(config) == hash(reordered) == hash(built)
    assert {config: "worker:1"}[built] == "worker:1"
    assert len({config, reordered, config.for_task("ps", 0)}) == 2
    assert config != config.for_task("worker", 0)
    with_empty = ClusterConfig.from_json(tf_config("worker", 1, {**CLUSTER, "evaluator": []}))
    assert with_empty != config and with_empty.empty_jobs == ("evaluator",)
    assert hash(with_empty) == hash(with_empty.for_task("worker", 1))
    # The public fields keep their types; the cluster stays read-only.
    assert config.cluster["worker"] == ("h1:2222", "h2:2222")
    with pytest.raises(TypeError):
        config.cluster["worker"] = ("x:1",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.task_index = 0

def test_empty_jobs_are_left_out_of_the_normalised_tf_config():
    raw = {"chief": [H[0]], "worker": [], "ps": [H[1]], "evaluator": []}
    config = ClusterConfig.from_json(tf_config("ps", 0, raw))
    normalised = json.loads(config.to_json())
    assert normalised["cluster"] == {"chief": [H[0]], "ps": [H[1]]}
    assert ClusterConfig.from_json(config.to_json()) == dataclasses.replace(
        config, empty_jobs=())
    # Seen from another task, the cluster still has its empty jobs.
    chief = config.for_task("chief", 0)
    assert chief.empty_jobs == ("evaluator", "worker") and not chief.is_single_node
    # Built directly, an empty job is moved out of `cluster` the same way.
    assert ClusterConfig(cluster=raw, task_type="ps", task_index=0) == config


# TFJob with enableDynamicWorker: true, task by task (tfjob_dynamic_view).
SPARSE_VIEWS = [
    pytest.param("worker", 1, dict(
        jobs=["ps"], sparse_jobs={"worker": {1: tfjob_address("worker", 1)}},
        training_cluster={"ps": tuple(TFJOB_DYNAMIC_PS),
                          "worker": {1: tfjob_address("worker", 1)}},
        training_tasks=("worker:1",), num_workers=1, num_ps=2,
        task_address=tfjob_address("worker", 1), is_sparse=True, is_distributed=True,
        is_chief=False, is_single_node=False, empty_jobs=()), id="worker-1"),
    # worker:0 of a partial view is not taken for the chief: it cannot tell.
    pytest.param("worker", 0, dict(
        sparse_jobs={"worker": {0: tfjob_address("worker", 0)}}, is_chief=False,
        has_chief=False, training_tasks=("worker:0",)), id="worker-0"),
    # A ps sees only itself: its one-address list is its own address, at its index.
    pytest.param("ps", 1, dict(
        jobs=[], sparse_jobs={"ps": {1: tfjob_address("ps", 1)}},
        training_cluster={"ps": {1: tfjob_address("ps", 1)}}, training_tasks=(),
        num_ps=1, task_address=tfjob_address("ps", 1), empty_jobs=("worker",),
        is_distributed=True, is_single_node=False, is_chief=False), id="ps-1"),
    pytest.param("ps", 0, dict(
        jobs=[], sparse_jobs={"ps": {0: tfjob_address("ps", 0)}},
        task_address=tfjob_address("ps", 0), is_single_node=False), id="ps-0"),
]


@pytest.mark.parametrize("task_type,index,facts", SPARSE_VIEWS)
def test_tfjob_dynamic_worker_views_parse_as_sparse_jobs(task_type, index, facts):
    config = ClusterConfig.from_env({"TF_CONFIG": tfjob_dynamic_view(task_type, index)})
    seen = dict(jobs=list(config.cluster))
    seen.update((name, getattr(config, name)) for name in facts if name not in seen)
    assert {name: seen[name] for name in facts} == facts
    assert config.task_name == f"{task_type}:{index}"
    # The normalised TF_CONFIG keeps each sparse job as an object keyed by index, and
    # parses back to the same config (but for the empty jobs it leaves out).
    normalised = json.loads(config.to_json())
    for job, tasks in config.sparse_jobs.items():
        assert normalised["cluster"][job] == {str(i): a for i, a in tasks.items()}
    assert ClusterConfig.from_json(config.to_json()) == dataclasses.replace(
        config, empty_jobs=())
    assert config.for_task(task_type, index) == config

def test_sparse_jobs_are_read_only_hashable_and_compare_by_value():
    config = ClusterConfig.from_json(tfjob_dynamic_view("worker", 1))
    worker = tfjob_address("worker", 1)
    built = ClusterConfig(cluster={"ps": TFJOB_DYNAMIC_PS, "worker": {1: worker}},
                          task_type="worker", task_index=1)
    apart = ClusterConfig(cluster={"ps": TFJOB_DYNAMIC_PS}, sparse_jobs={"worker": {"1": worker}},
                          task_type="worker", task_index=1)
    assert config == built == apart
    assert hash(config) == hash(built) == hash(apart)
    other = ClusterConfig(cluster={"ps": TFJOB_DYNAMIC_PS, "worker": {2: worker}},
                          task_type="worker", task_index=2)
    assert other != config and len({config, built, other}) == 2
    # A dense job of the same addresses is another cluster: it says there is one worker.
    dense = ClusterConfig(cluster={"ps": TFJOB_DYNAMIC_PS, "worker": [worker]},
                          task_type="worker", task_index=0)
    sparse = ClusterConfig(cluster={"ps": TFJOB_DYNAMIC_PS, "worker": {0: worker}},
                           task_type="worker", task_index=0)
    assert dense.sparse_jobs == {} and dense != sparse and hash(dense) != hash(sparse)
    assert dense.is_chief and not sparse.is_chief
    with pytest.raises(TypeError):
        config.sparse_jobs["worker"] = {0: "x:1"}
    with pytest.raises(TypeError):
        config.sparse_jobs["worker"][0] = "x:1"
    # An empty sparse job is an empty job, as an empty list is.
    assert ClusterConfig(cluster={"ps": ["p:1"], "worker": {}}, task_type="ps",
                         task_index=0).empty_jobs == ("worker",)
    with pytest.raises(ValueError, match="both in cluster and in sparse_jobs"):
        ClusterConfig(cluster={"worker": ["a:1"]}, sparse_jobs={"worker": {1: "b:1"}})

def test_tfjob_evaluator_is_inside_the_cluster_but_outside_training():
    config = ClusterConfig.from_json(tf_config("chief", 0, TFJOB, environment="cloud"))
    assert config.environment == "cloud"
    assert config.training_tasks == ("chief:0", "worker:0", "worker:1")
    assert "evaluator" not in config.training_cluster and "evaluator" in config.cluster


@pytest.mark.parametrize("cluster, task, chief", [
    (None, None, None),
    ({"chief": ["h0:1"], "worker": ["h1:1"]}, "worker:0", "chief:0"),
    ({"master": ["h0:1"], "worker": ["h1:1"], "ps": ["h2:1"]}, "ps:0", "master:0"),
    ({"worker": ["h1:1", "h2:1"]}, "worker:1", "worker:0"),
])
def test_chief_task_is_the_one_that_writes_checkpoints(cluster, task, chief):
    data = {} if cluster is None else {
        "cluster": cluster, "task": {"type": task.split(":")[0], "index": int(task[-1])}}
    assert ClusterConfig.from_dict(data).chief_task == chief
