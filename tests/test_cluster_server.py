"""Server start-up and the worker start-delay rule, with real servers where cheap."""

import portpicker
import pytest

from fakes import FakeServer
from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.cluster.server import WorkerDelay, start_standard_server

pytestmark = pytest.mark.tf_line


@pytest.mark.parametrize("task_type,index,delay,run_config_max,expected", [
    ("worker", 0, WorkerDelay(), None, 5),
    ("worker", 3, WorkerDelay(), None, 20),
    ("worker", 20, WorkerDelay(), None, 60),          # the reference's 60 s cap
    ("worker", 20, WorkerDelay(), 12, 12),            # RunConfig.experimental_max_worker_delay_secs
    ("worker", 20, WorkerDelay(max_secs=30), 12, 30),  # an explicit cap wins
    ("worker", 2, WorkerDelay(secs_per_index=0), None, 0),  # disabled
    ("worker", 2, WorkerDelay(max_secs=0), None, 0),        # disabled
    ("chief", 0, WorkerDelay(), None, 0),
    ("ps", 1, WorkerDelay(), None, 0),
])
def test_worker_delay(task_type, index, delay, run_config_max, expected):
    assert delay.secs_for(task_type, index, run_config_max) == expected


def test_bad_worker_delay():
    with pytest.raises(ConfigError, match=r"secs_per_index` \(-1\) must be >= 0"):
        WorkerDelay(secs_per_index=-1)


def cluster(task_type, index=0, **jobs):
    jobs = jobs or {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],
                    "ps": ["127.0.0.1:3"], "evaluator": ["127.0.0.1:4"]}
    return ClusterConfig(cluster=jobs, task_type=task_type, task_index=index)


def test_server_serves_training_cluster_with_rpc_layer():
    FakeServer.made.clear()
    server = start_standard_server(cluster("ps"), server_factory=FakeServer)
    assert server.started
    assert server.args["job_name"] == "ps" and server.args["protocol"] == "grpc"
    assert "evaluator" not in server.args["cluster_spec"]  # stands outside training
    assert server.args["start"] is False  # created, then started explicitly


def test_chief_with_evaluator_in_cluster_starts_a_server():
    # RunConfig gives this chief a gRPC master (the evaluator job counts), so the
    # server must exist or the Estimator's session would wait for it forever.
    FakeServer.made.clear()
    config = cluster("chief", chief=["127.0.0.1:1"], evaluator=["127.0.0.1:2"])
    server = start_standard_server(config, server_factory=FakeServer)
    assert server is not None and server.started
    assert server.args["cluster_spec"] == {"chief": ["127.0.0.1:1"]}


def test_single_node_needs_no_server():
    FakeServer.made.clear()
    assert start_standard_server(cluster("chief", chief=["127.0.0.1:1"]),
                                 server_factory=FakeServer) is None
    assert FakeServer.made == []


@pytest.mark.parametrize("config,words", [
    (ClusterConfig(), "TF_CONFIG has no cluster and task"),
    (ClusterConfig(cluster={"chief": ["h:1"]}, task_type="evaluator", task_index=0),
     "has no address in TF_CONFIG cluster"),
])
def test_server_errors(config, words):
    with pytest.raises(ConfigError, match=words):
        start_standard_server(config, server_factory=FakeServer)


def test_real_server_starts_on_its_port():
    ports = [portpicker.pick_unused_port() for _ in range(2)]
    config = ClusterConfig(cluster={"chief": [f"127.0.0.1:{ports[0]}"],
                                    "ps": [f"127.0.0.1:{ports[1]}"]},
                           task_type="ps", task_index=0)
    server = start_standard_server(config)
    assert server.target == f"grpc://127.0.0.1:{ports[1]}"


def test_lone_trainer_beside_an_empty_job_starts_a_server():
    # A TFJob with 0 Worker replicas writes "worker": []. RunConfig counts that job,
    # so it gives the chief a gRPC master: the server must exist (without the job).
    FakeServer.made.clear()
    config = cluster("chief", chief=["127.0.0.1:1"], worker=[])
    server = start_standard_server(config, server_factory=FakeServer)
    assert server is not None and server.started
    assert server.args["cluster_spec"] == {"chief": ["127.0.0.1:1"]}


def test_real_server_for_a_cluster_with_empty_jobs_serves_sessions():
    import json

    import tensorflow as tf

    port = portpicker.pick_unused_port()
    config = ClusterConfig.from_json(json.dumps({
        "cluster": {"chief": [f"127.0.0.1:{port}"], "worker": [], "ps": [], "evaluator": []},
        "task": {"type": "chief", "index": 0}}))
    server = start_standard_server(config)
    assert server.target == f"grpc://127.0.0.1:{port}"
    assert [job.name for job in server.server_def.cluster.job] == ["chief"]
    with tf.Graph().as_default():
        doubled = tf.constant(21.0) * 2
        with tf.compat.v1.Session(server.target) as session:
            assert session.run(doubled) == 42.0


def _sparse_view(task_type, index, ports):
    """A TFJob enableDynamicWorker view (tf_configs.tfjob_dynamic_view) on 127.0.0.1."""
    worker, ps0, ps1 = (f"127.0.0.1:{port}" for port in ports)
    if task_type == "worker":
        cluster = {"worker": {str(index): worker}, "ps": [ps0, ps1]}
    else:
        cluster = {"worker": {}, "ps": [ps1]}
    import json

    return ClusterConfig.from_json(json.dumps({
        "cluster": cluster, "task": {"type": task_type, "index": index}}))


def test_sparse_views_start_servers_with_their_tasks_at_their_indices():
    """A TFJob with enableDynamicWorker: worker:3 knows itself and the ps; ps:1 only itself
    (its ps list has one address, at index 1). tf.train.ClusterSpec takes {index: address}."""
    from trainexec.launch.spec import pick_ports

    ports = pick_ports(3)
    worker = start_standard_server(_sparse_view("worker", 3, ports))
    assert worker.target == f"grpc://127.0.0.1:{ports[0]}"
    jobs = {job.name: dict(job.tasks) for job in worker.server_def.cluster.job}
    assert jobs == {"worker": {3: f"127.0.0.1:{ports[0]}"},
                    "ps": {0: f"127.0.0.1:{ports[1]}", 1: f"127.0.0.1:{ports[2]}"}}
    ps = start_standard_server(_sparse_view("ps", 1, ports))
    assert ps.target == f"grpc://127.0.0.1:{ports[2]}"
    assert {job.name: dict(job.tasks) for job in ps.server_def.cluster.job} == {
        "ps": {1: f"127.0.0.1:{ports[2]}"}}


def test_a_master_keeps_its_job_name_in_the_servers_cluster_spec():
    # tf.estimator knows "master"; the Keras coordinator's resolver renames it "chief",
    # and the servers of a ParameterServerStrategy job serve it either way.
    FakeServer.made.clear()
    config = ClusterConfig(cluster={"master": ["algo-1:2222"], "worker": ["algo-2:2222"],
                                    "ps": ["algo-1:2223", "algo-2:2223"]},
                           task_type="ps", task_index=1)
    server = start_standard_server(config, server_factory=FakeServer)
    assert server.args["cluster_spec"]["master"] == ["algo-1:2222"]
    assert (server.args["job_name"], server.args["task_index"]) == ("ps", 1)


@pytest.mark.estimator
def test_estimator_chief_of_a_tfjob_with_zero_worker_replicas_trains(tmp_path):
    """The real Estimator's RunConfig connects to grpc://chief; trainexec's server
    answers (without it the session would wait forever: the timeout catches that)."""
    import json
    import os
    import subprocess
    import sys

    from trainexec.records.completion import read_training_complete

    port = portpicker.pick_unused_port()
    env = dict(os.environ, TF_CONFIG=json.dumps({
        "cluster": {"chief": [f"127.0.0.1:{port}"], "worker": []},
        "task": {"type": "chief", "index": 0}}))
    model_dir = str(tmp_path / "model")
    done = subprocess.run(
        [sys.executable, "-m", "trainexec.examples.estimator_job", "--model-dir", model_dir,
         "--max-steps", "20", "--save-checkpoints-steps", "10"],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "role chief done" in done.stdout and "after 20 local training steps" in done.stdout
    assert "Started TensorFlow server for chief:0" in done.stderr
    assert read_training_complete(model_dir).global_step == 20
