"""trainexec/launch/cluster.py: LocalCluster builds the tasks (one cluster spec, a distinct
task per process), looks them up, and refuses a command that cannot start, without
running a task. Running them (TF_CONFIG and ports, output, stop, kill and restart, no
survivors) is tests/cluster/test_launch_cluster_processes.py; what the job does when
tasks end is tests/cluster/test_launch_supervisor.py.
"""

from __future__ import annotations

import json

import pytest

from trainexec.cluster.config import ClusterConfig
from trainexec.launch import LocalCluster
from launch_clusters import make_cluster  # noqa: F401
from processes import role

pytestmark = pytest.mark.any_line


# -- building the cluster (no processes) ---------------------------------------------------
def test_one_cluster_spec_with_a_distinct_task_per_process(make_cluster):
    cluster = make_cluster(role(), workers=2, ps=2, evaluator=True)
    names = [t.name for t in cluster.tasks]
    assert names == ["chief:0", "worker:0", "worker:1", "ps:0", "ps:1", "evaluator:0"]
    configs = [ClusterConfig.from_json(t.tf_config) for t in cluster.tasks]
    assert all(dict(c.cluster) == dict(configs[0].cluster) for c in configs)
    assert set(configs[0].cluster) == {"chief", "worker", "ps"}  # no evaluator job
    assert [(c.task_type, c.task_index) for c in configs] == [
        ("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0), ("ps", 1), ("evaluator", 0)]
    addresses = [t.address for t in cluster.tasks[:-1]]
    assert len(set(addresses)) == 5 and all(a.startswith("127.0.0.1:") for a in addresses)
    assert cluster.tasks[-1].address is None
    assert cluster.primary == ["chief:0", "evaluator:0"]

def test_no_chief_makes_worker0_lead():
    cluster = LocalCluster(role(), workers=2, chief=False)
    assert [t.name for t in cluster.tasks] == ["worker:0", "worker:1"]
    assert "chief" not in json.loads(cluster.tasks[0].tf_config)["cluster"]
    assert cluster.primary == ["worker:0"]

def test_task_lookup_and_wait_before_start():
    cluster = LocalCluster(role(), ps=1)
    assert cluster.task("ps") is cluster.task("ps:0")
    with pytest.raises(KeyError, match="chief:0, worker:0, ps:0"):
        cluster.task("worker:5")
    with pytest.raises(RuntimeError, match="start"):
        cluster.wait()


# -- running it ----------------------------------------------------------------------------
def test_a_command_that_cannot_start_raises():
    with pytest.raises(FileNotFoundError):
        LocalCluster(["/nonexistent/trainexec-program"], workers=2).start()
