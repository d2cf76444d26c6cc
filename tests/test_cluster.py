"""trainexec/cluster.py: ClusterConfig's facts for valid layouts, hashing, the normalised
TF_CONFIG. Malformed TF_CONFIGs are tests/test_cluster_parsing.py."""

import dataclasses
import json

import pytest

from trainexec import ClusterConfig
from tf_configs import (CLUSTER, TFJOB_MASTER_EVALUATOR, TFJOB_NO_WORKERS,
                        TFJOB_TWO_EVALUATORS, H, tf_config)


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
