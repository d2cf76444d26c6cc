"""TF_CONFIG parsing: valid layouts, one row per malformed input, the CLI."""

import json
import os
import subprocess
import sys

import pytest

from trainexec import ClusterConfig, ConfigError

CLUSTER = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]}


def tf_config(task_type="worker", index=0, cluster=CLUSTER, **extra):
    data = {"cluster": cluster, "task": {"type": task_type, "index": index}}
    data.update(extra)
    return json.dumps(data)


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


def test_explain_names_role_and_marks_task():
    text = ClusterConfig.from_json(tf_config("worker", 1)).explain()
    assert "role: worker:1" in text
    assert "h2:2222   <- this task" in text


BAD = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"cluster": ["h:1"], "task": {"type": "worker", "index": 0}}', "TF_CONFIG cluster is"),
    ('{"cluster": {"worker": "h:1"}, "task": {"type": "worker", "index": 0}}',
     "cluster.worker is \"h:1\" (string): expected a list"),
    ('{"cluster": {"worker": []}, "task": {"type": "worker", "index": 0}}',
     "cluster.worker is an empty list"),
    ('{"cluster": {"worker": ["hostonly"]}, "task": {"type": "worker", "index": 0}}',
     'cluster.worker[0] "hostonly" is not a "host:port" address'),
    ('{"cluster": {"worker": ["h:99999"]}, "task": {"type": "worker", "index": 0}}',
     "port 99999"),
    ('{"cluster": {"worker": [7]}, "task": {"type": "worker", "index": 0}}',
     "cluster.worker[0] is 7"),
    ('{"cluster": {"worker": ["h:1"]}}', "has a cluster but no task"),
    ('{"cluster": {"worker": ["h:1"]}, "task": "worker"}', "TF_CONFIG task is"),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"index": 0}}', "has no type"),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}}', "has no index"),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": -1}}',
     "task.index -1 is negative"),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": "0"}}',
     "task.index is \"0\" (string): expected a non-negative integer"),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": true}}',
     "task.index is true (boolean)"),
    ('{"cluster": {"worker": ["h:1", "h:2"]}, "task": {"type": "worker", "index": 2}}',
     'task.index 2 is out of range for "worker" (cluster has 2 worker tasks'),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "ps", "index": 0}}',
     'task.type "ps" is not a job in the cluster (jobs: worker)'),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "trainer", "index": 0}}',
     'task.type "trainer" is not supported: use one of chief, worker, master, ps, evaluator'),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "local", "index": 0}}',
     'cannot be "local": to train and evaluate on one machine leave out'),
    ('{"cluster": {"chief": ["h:1", "h:2"]}, "task": {"type": "chief", "index": 0}}',
     "cluster.chief has 2 tasks"),
    ('{"cluster": {"chief": ["h:1"], "master": ["h:2"]}, "task": {"type": "chief", "index": 0}}',
     "both a chief and a master"),
    ('{"cluster": {"worker": ["h:1"], "evaluator": ["h:2", "h:3"]}, '
     '"task": {"type": "worker", "index": 0}}', "cluster.evaluator has 2 tasks"),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "evaluator", "index": 1}}',
     "there can be only one evaluator, with index 0"),
    ('{"cluster": {"worker": ["h:1"], "ps": ["h:1"]}, "task": {"type": "worker", "index": 0}}',
     'cluster.ps[0] and cluster.worker[0] both use "h:1"'),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, '
     '"rpc_layer": "grpc+verbs"}', "rpc_layer \"grpc+verbs\" is not supported"),
    ('{"task": {"type": "worker", "index": 0}}', 'task.type "worker" needs a cluster'),
    ('{"cluster": {"master": ["h:1"], "evaluator": ["h:2"]}, '
     '"task": {"type": "master", "index": 0}}', "both a master and an evaluator"),
    ('{"cluster": {"master": ["h:1"]}, "task": {"type": "evaluator", "index": 0}}',
     "cannot join a cluster with a master"),
]


@pytest.mark.parametrize("text,words", BAD, ids=[w[:40] for _, w in BAD])
def test_malformed_tf_config_is_explained(text, words):
    with pytest.raises(ConfigError) as info:
        ClusterConfig.from_env({"TF_CONFIG": text})
    assert isinstance(info.value, ValueError)
    assert words in str(info.value)


def _cli(env_tf_config):
    env = dict(os.environ, TF_CONFIG=env_tf_config)
    return subprocess.run([sys.executable, "-m", "trainexec", "tfconfig"], env=env,
                          capture_output=True, text=True, timeout=60)


def test_cli_tfconfig_shows_role():
    done = _cli(tf_config("ps", 0))
    assert done.returncode == 0, done.stderr
    assert "role: ps:0" in done.stdout and "h3:2222   <- this task" in done.stdout


def test_cli_tfconfig_exits_2_on_error():
    done = _cli(tf_config("worker", 5))
    assert done.returncode == 2
    assert 'task.index 5 is out of range for "worker"' in done.stderr
