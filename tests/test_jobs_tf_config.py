"""trainexec/jobs/tf_config.py: the TF_CONFIG the Kubeflow training operator writes for
each pod of a TFJob, as the task that receives it reads it (trainexec's own TF_CONFIG
parser, `ClusterConfig`): every task finds itself at its own service address, a role of
0 replicas is an empty job, the sparse view of `enableDynamicWorker`. The exact JSON text
and the sparse views are in tests/test_jobs_shape.py.
"""

from __future__ import annotations

import json

import pytest

from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.jobs.shape import JobShape, Role
from trainexec.jobs.tf_config import service_addresses, tfjob_tf_config

pytestmark = pytest.mark.any_line

SHAPE = JobShape((Role("chief"), Role("worker", 2), Role("ps", 1), Role("evaluator")),
                 name="demo")


@pytest.mark.parametrize("task_type, index", SHAPE.tasks())
def test_every_pod_reads_its_tf_config_as_itself_at_its_own_service(task_type, index):
    cluster = service_addresses(SHAPE, "demo", "ml", port=2345)
    config = ClusterConfig.from_json(tfjob_tf_config(cluster, task_type, index))
    assert config.task_name == f"{task_type}:{index}"
    assert config.task_address == f"demo-{task_type}-{index}.ml.svc:2345"
    assert config.environment == "cloud"
    assert config.chief_task == "chief:0"
    assert (config.num_workers, config.num_ps) == (3, 1)  # chief and 2 workers train
    assert sorted(config.cluster) == ["chief", "evaluator", "ps", "worker"]
    assert config.is_chief is (task_type == "chief")


def test_the_default_addresses_are_in_the_default_namespace_on_port_2222():
    shape = JobShape.from_counts(["python", "t.py"], workers=2, ps=1)
    assert service_addresses(shape, "mnist") == {
        "chief": ["mnist-chief-0.default.svc:2222"],
        "worker": ["mnist-worker-0.default.svc:2222", "mnist-worker-1.default.svc:2222"],
        "ps": ["mnist-ps-0.default.svc:2222"]}
    assert set(service_addresses(shape, "mnist", port=3000)["worker"]) == {
        "mnist-worker-0.default.svc:3000", "mnist-worker-1.default.svc:3000"}


def test_a_role_of_zero_replicas_is_an_empty_list_the_task_reads_as_an_empty_job():
    shape = JobShape((Role("chief"), Role("worker", 1), Role("ps", 0)))
    text = tfjob_tf_config(service_addresses(shape, "demo"), "worker", 0)
    assert json.loads(text)["cluster"]["ps"] == []
    config = ClusterConfig.from_json(text)
    assert config.empty_jobs == ("ps",) and "ps" not in config.cluster
    assert config.num_ps == 0 and config.task_address == "demo-worker-0.default.svc:2222"


def test_the_cluster_given_is_not_changed_and_sequences_of_any_kind_are_written_as_lists():
    cluster = {"worker": ("w0:1", "w1:1"), "chief": ("c:1",)}
    before = {job: tuple(addresses) for job, addresses in cluster.items()}
    written = json.loads(tfjob_tf_config(cluster, "chief", 0))
    assert written["cluster"] == {"chief": ["c:1"], "worker": ["w0:1", "w1:1"]}
    assert cluster == before and list(cluster) == ["worker", "chief"]


def test_a_sparse_worker_reads_itself_and_every_ps_and_no_environment():
    cluster = {"chief": ["c:1"], "worker": ["w0:1", "w1:1", "w2:1"], "ps": ["p0:1", "p1:1"]}
    config = ClusterConfig.from_json(tfjob_tf_config(cluster, "worker", 2, sparse=True))
    assert config.is_sparse
    assert config.task_name == "worker:2" and config.task_address == "w2:1"
    assert dict(config.sparse_jobs["worker"]) == {2: "w2:1"}  # itself, by its index
    assert config.num_ps == 2 and config.num_workers == 1
    assert config.environment is None
    assert not config.is_chief   # a sparse task cannot tell it is the only worker


def test_a_sparse_worker_of_a_job_without_ps_sees_an_empty_ps_list():
    text = tfjob_tf_config({"worker": ["w0:1", "w1:1"]}, "worker", 0, sparse=True)
    assert json.loads(text)["cluster"] == {"worker": {"0": "w0:1"}, "ps": []}
    config = ClusterConfig.from_json(text)
    assert config.num_ps == 0 and config.empty_jobs == ("ps",)


def test_a_sparse_ps_sees_only_itself_and_finds_its_own_address():
    cluster = {"worker": ["w0:1"], "ps": ["p0:1", "p1:1"]}
    config = ClusterConfig.from_json(tfjob_tf_config(cluster, "ps", 1, sparse=True))
    assert config.is_sparse and config.num_ps == 1 and config.num_workers == 0
    # The one address it is given is its own, though listed at position 0.
    assert config.task_name == "ps:1" and config.task_address == "p1:1"
    assert config.empty_jobs == ("worker",)


@pytest.mark.parametrize("task_type", ["chief", "evaluator"])
def test_the_empty_sparse_view_of_a_chief_or_evaluator_is_refused_naming_the_fix(task_type):
    cluster = {"chief": ["c:1"], "worker": ["w0:1"], "ps": ["p0:1"], "evaluator": ["e:1"]}
    text = tfjob_tf_config(cluster, task_type, 0, sparse=True)
    assert json.loads(text)["cluster"] == {"worker": {}, "ps": []}
    with pytest.raises(ConfigError) as refused:
        ClusterConfig.from_json(text)
    message = str(refused.value)
    assert message.startswith('TF_CONFIG cluster {"worker": {}, "ps": []} ')
    assert f"{task_type}:0" in message
    assert "set enableDynamicWorker: false" in message
