"""Server start-up and the worker start-delay rule, with real servers where cheap."""

import portpicker
import pytest

from trainexec.cluster import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.server import WorkerDelay, start_standard_server


class FakeServer:
    made = []

    def __init__(self, cluster_spec, job_name, task_index, protocol, config, start):
        self.args = dict(cluster_spec=cluster_spec.as_dict(), job_name=job_name,
                         task_index=task_index, protocol=protocol, start=start)
        self.started = False
        FakeServer.made.append(self)

    def start(self):
        self.started = True


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
