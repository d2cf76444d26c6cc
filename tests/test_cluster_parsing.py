"""trainexec/cluster/parsing.py: one row per malformed TF_CONFIG, each naming the field,
the value and the fix (through ClusterConfig.from_env, as users meet them)."""

import pytest

from trainexec import ClusterConfig, ConfigError

pytestmark = pytest.mark.any_line


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
    # A TFJob with 2 Evaluator replicas: only evaluator:1 fails (the others train).
    ('{"cluster": {"chief": ["h:1"], "evaluator": ["h:2", "h:3"]}, '
     '"task": {"type": "evaluator", "index": 1}}',
     "cluster.evaluator lists 2). Set the TFJob's Evaluator replicas to 1"),
    ('{"cluster": {"chief": [], "worker": ["h:1"]}, "task": {"type": "chief", "index": 0}}',
     'cluster.chief is an empty list, so task chief:0 has no address: list its "host:port"'),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "evaluator", "index": 1}}',
     "there can be only one evaluator, with index 0"),
    ('{"cluster": {"worker": ["h:1"], "ps": ["h:1"]}, "task": {"type": "worker", "index": 0}}',
     'cluster.ps[0] and cluster.worker[0] both use "h:1"'),
    ('{"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, '
     '"rpc_layer": "grpc+verbs"}', "rpc_layer \"grpc+verbs\" is not supported"),
    ('{"task": {"type": "worker", "index": 0}}', 'task.type "worker" needs a cluster'),
    # A TFJob Master + Evaluator: only the evaluator fails (the master trains).
    ('{"cluster": {"master": ["h:1"], "evaluator": ["h:2"]}, '
     '"task": {"type": "evaluator", "index": 0}}',
     "rename the TFJob's Master replica spec to Chief"),
    ('{"cluster": {"master": ["h:1"]}, "task": {"type": "evaluator", "index": 0}}',
     "cannot join a cluster with a master"),
    # A job given as an object maps task indices to addresses (TFJob enableDynamicWorker).
    ('{"cluster": {"worker": {"x": "h:1"}}, "task": {"type": "worker", "index": 0}}',
     'TF_CONFIG cluster.worker key "x" is not a task index'),
    ('{"cluster": {"worker": {"-1": "h:1"}}, "task": {"type": "worker", "index": 0}}',
     'cluster.worker key "-1" is not a task index: a job given as an object maps task '
     'indices (non-negative integers written as strings'),
    ('{"cluster": {"worker": {"01": "h:1"}}, "task": {"type": "worker", "index": 1}}',
     'cluster.worker key "01" is not a task index'),
    ('{"cluster": {"ps": {"1.0": "h:1"}}, "task": {"type": "ps", "index": 1}}',
     'cluster.ps key "1.0" is not a task index'),
    ('{"cluster": {"worker": {"1": "hostonly"}}, "task": {"type": "worker", "index": 1}}',
     'cluster.worker["1"] "hostonly" is not a "host:port" address'),
    ('{"cluster": {"worker": {"1": 7}}, "task": {"type": "worker", "index": 1}}',
     'cluster.worker["1"] is 7 (int): expected a "host:port" string'),
    ('{"cluster": {"worker": {"1": "h:1"}}, "task": {"type": "worker", "index": 0}}',
     "task worker:0 is not in cluster.worker, which lists only worker:1"),
    ('{"cluster": {"worker": {"1": "h:1"}, "ps": ["h:1"]}, '
     '"task": {"type": "worker", "index": 1}}',
     'cluster.worker["1"] and cluster.ps[0] both use "h:1"'),
    ('{"cluster": {"chief": {"0": "h:1", "1": "h:2"}}, "task": {"type": "chief", "index": 0}}',
     "cluster.chief has 2 tasks"),
    ('{"cluster": {"worker": {}, "ps": ["h:1"]}, "task": {"type": "worker", "index": 0}}',
     "cluster.worker is an empty object, so task worker:0 has no address"),
    # What such a TFJob gives its chief, master and evaluator: nothing to run with.
    ('{"cluster": {"worker": {}, "ps": []}, "task": {"type": "chief", "index": 0}}',
     'TF_CONFIG cluster {"worker": {}, "ps": []} gives chief:0 no address, neither its own '
     "nor those of the workers and ps it must lead: a Kubeflow TFJob with "
     "enableDynamicWorker: true writes this"),
    ('{"cluster": {"worker": {}, "ps": []}, "task": {"type": "master", "index": 0}}',
     "enableDynamicWorker gives the chief no cluster; each worker sees only itself and the "
     "ps, each ps only itself). To run this job, set enableDynamicWorker: false (or leave "
     "it out) in the TFJob spec"),
    ('{"cluster": {"worker": {}, "ps": []}, "task": {"type": "evaluator", "index": 0}}',
     "lists no chief, so evaluator:0 would wait for checkpoints that never come"),
    ('{"cluster": {"worker": {"1": "h:1"}}, "task": {"type": "evaluator", "index": 0}}',
     "set enableDynamicWorker: false"),
]


@pytest.mark.parametrize("text,words", BAD, ids=[w[:40] for _, w in BAD])
def test_malformed_tf_config_is_explained(text, words):
    with pytest.raises(ConfigError) as info:
        ClusterConfig.from_env({"TF_CONFIG": text})
    assert isinstance(info.value, ValueError)
    assert words in str(info.value)
