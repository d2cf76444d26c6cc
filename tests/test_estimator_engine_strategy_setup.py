"""This task's copy of a RunConfig's strategy in a TF_CONFIG cluster, and the configs its
sessions and server start with (`trainexec.estimator_engine.strategy_setup`): a
MultiWorkerMirroredStrategy configured for the cluster without starting a server, its
server config carrying the collective group leader without device filters."""

import json

import portpicker
import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.estimator_engine.strategy_setup import (for_task, server_config,
                                                       serving_already, session_config_for)

pytestmark = pytest.mark.tf_line


def local_mwms(monkeypatch):
    """A MultiWorkerMirroredStrategy built without TF_CONFIG (one machine, one replica)."""
    with monkeypatch.context() as patch:
        patch.delenv("TF_CONFIG", raising=False)
        return tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy()


def test_a_cluster_task_gets_a_configured_copy_and_no_server(monkeypatch):
    strategy = local_mwms(monkeypatch)
    chief, worker = (f"localhost:{portpicker.pick_unused_port()}" for _ in range(2))
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": [chief], "worker": [worker]},
        "task": {"type": "worker", "index": 0}}))
    config = te.RunConfig(train_distribute=strategy)
    copied = for_task(strategy, config)
    assert copied is not strategy
    assert (copied.num_replicas_in_sync, strategy.num_replicas_in_sync) == (2, 1)
    assert not serving_already(config)  # configured in a graph: no eager server started
    session = session_config_for(copied, config.session_config)
    assert session.experimental.collective_group_leader == "/job:chief/replica:0/task:0"
    assert list(session.device_filters) == ["/job:worker/task:0"]
    server = server_config(config)
    assert server.experimental.collective_group_leader == "/job:chief/replica:0/task:0"
    assert list(server.device_filters) == []  # collectives reach every task


def test_no_server_config_outside_a_cluster_or_without_a_strategy(monkeypatch):
    strategy = local_mwms(monkeypatch)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert server_config(te.RunConfig(train_distribute=strategy)) is None
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["h0:1"], "worker": ["h1:1"]},
        "task": {"type": "evaluator", "index": 0}}))
    assert server_config(te.RunConfig(train_distribute=strategy)) is None
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["h0:1"], "worker": ["h1:1"]},
        "task": {"type": "chief", "index": 0}}))
    assert server_config(te.RunConfig()) is None
