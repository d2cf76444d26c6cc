"""trainexec/launch/spec.py: the cluster spec with a free port per task, and each task's
validated TF_CONFIG. No processes are started."""

import pytest

from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.launch.spec import format_address, plan_tasks

pytestmark = pytest.mark.any_line


def test_every_task_gets_the_one_cluster_spec_and_its_own_address():
    spec, tasks = plan_tasks("127.0.0.1", chief=True, workers=2, ps=1, evaluator=True)
    assert list(spec) == ["chief", "worker", "ps"]  # the evaluator stands outside
    assert [t.name for t in tasks] == ["chief:0", "worker:0", "worker:1", "ps:0",
                                       "evaluator:0"]
    addresses = spec["chief"] + spec["worker"] + spec["ps"]
    assert [t.address for t in tasks] == addresses + [None]
    assert len(set(addresses)) == 4 and all(a.startswith("127.0.0.1:") for a in addresses)
    for task in tasks:
        config = ClusterConfig.from_json(task.tf_config)
        assert config.task_name == task.name and config.task_address == task.address
        assert {job: list(a) for job, a in config.cluster.items()} == spec


def test_without_a_chief_only_workers_and_ps_are_listed():
    spec, tasks = plan_tasks("127.0.0.1", chief=False, workers=1, ps=0, evaluator=False)
    assert list(spec) == ["worker"] and [t.name for t in tasks] == ["worker:0"]


def test_ipv6_hosts_are_bracketed_and_bad_hosts_refused():
    assert format_address("::1", 2222) == "[::1]:2222"
    assert format_address("[::1]", 2222) == "[::1]:2222"
    assert format_address("localhost", 2222) == "localhost:2222"
    _, tasks = plan_tasks("::1", chief=True, workers=0, ps=0, evaluator=False)
    assert tasks[0].address.startswith("[::1]:")
    with pytest.raises(ConfigError, match='is not a "host:port" address'):
        plan_tasks("my host", chief=True, workers=1, ps=0, evaluator=False)
