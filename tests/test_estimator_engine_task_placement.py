"""TF_CONFIG -> this task's place, by tf.estimator RunConfig's rules: one row per TF_CONFIG
a task may be given, asserting what RunConfig then answers; one row per TF_CONFIG it
refuses, asserting the exception, tf.estimator's words and trainexec's fix.
(tests/test_estimator_engine_run_config.py holds the same rows against tf.estimator.)"""

import json

import pytest

from tf_configs import RAY_WORKERS, SAGEMAKER_PS, TFJOB, TFJOB_NO_WORKERS
from trainexec.errors import ConfigError
from trainexec.estimator_engine.task_placement import place_task, read_tf_config

pytestmark = pytest.mark.tf_line

C = {"chief": ["h0:0"], "ps": ["h1:1", "h2:2"], "worker": ["h3:3", "h4:4", "h5:5"]}
M = {"master": ["h0:0"], "ps": ["h1:1", "h2:2"], "worker": ["h3:3", "h4:4", "h5:5"]}
LOCAL = dict(cluster={}, task_type="worker", task_id=0, master="", evaluation_master="",
             is_chief=True, num_worker_replicas=1, num_ps_replicas=0, global_id_in_cluster=0)
EVALUATOR = dict(cluster={}, master="", is_chief=False, num_worker_replicas=0,
                 num_ps_replicas=0, global_id_in_cluster=None)


def task(task_type, index, cluster, **extra):
    return {"cluster": cluster, "task": {"type": task_type, "index": index}, **extra}


# (TF_CONFIG, what differs from LOCAL). These are tf.estimator's answers, except where a
# row says tf.estimator fails.
PLACED = {
    "no TF_CONFIG": ({}, {}),
    "a task and no cluster, on one machine": ({"task": {"type": "worker", "index": 0}}, {}),
    "one machine's session targets": (
        {"session_master": "grpc://m:1", "eval_session_master": "grpc://e:2"},
        dict(master="grpc://m:1", evaluation_master="grpc://e:2")),
    "the chief": (task("chief", 0, C), dict(
        cluster=C, task_type="chief", master="grpc://h0:0", num_worker_replicas=4,
        num_ps_replicas=2)),
    "a worker": (task("worker", 1, C), dict(
        cluster=C, task_id=1, master="grpc://h4:4", is_chief=False, num_worker_replicas=4,
        num_ps_replicas=2, global_id_in_cluster=2)),
    "a ps, numbered last": (task("ps", 1, C), dict(
        cluster=C, task_type="ps", task_id=1, master="grpc://h2:2", is_chief=False,
        num_worker_replicas=4, num_ps_replicas=2, global_id_in_cluster=5)),
    "the evaluator stands outside the cluster": (
        task("evaluator", 12, C, eval_session_master="grpc://e:2"),
        dict(EVALUATOR, task_type="evaluator", task_id=12, evaluation_master="grpc://e:2")),
    "a cluster of one chief needs no server": (task("chief", 0, {"chief": ["h0:0"]}),
                                               dict(cluster={"chief": ["h0:0"]},
                                                    task_type="chief")),
    "TF_CONFIG's session_master wins in a cluster": (
        task("chief", 0, {"chief": ["h0:0"], "ps": ["h1:1"]}, session_master="grpc://m:1"),
        dict(cluster={"chief": ["h0:0"], "ps": ["h1:1"]}, task_type="chief",
             master="grpc://m:1", num_ps_replicas=1)),
    "the master of a TF 1.x cluster": (task("master", 0, M), dict(
        cluster=M, task_type="master", master="grpc://h0:0", num_worker_replicas=4,
        num_ps_replicas=2)),
    "a worker beside a master": (task("worker", 2, M), dict(
        cluster=M, task_id=2, master="grpc://h5:5", is_chief=False, num_worker_replicas=4,
        num_ps_replicas=2, global_id_in_cluster=3)),
    "another job is numbered between the chief and the ps, by name": (
        task("other_type", 1, {**C, "other_type": ["h6:6", "h7:7"]}),
        dict(cluster={**C, "other_type": ["h6:6", "h7:7"]}, task_type="other_type",
             task_id=1, master="grpc://h7:7", is_chief=False, num_worker_replicas=4,
             num_ps_replicas=2, global_id_in_cluster=2)),
    "a cluster spec that only names tasks (port 0)": (
        task("worker", 0, {"chief": ["localhost:0"], "worker": ["localhost:0"]}),
        dict(cluster={"chief": ["localhost:0"], "worker": ["localhost:0"]},
             master="grpc://localhost:0", is_chief=False, num_worker_replicas=2,
             global_id_in_cluster=1)),
    "an index given as a string, as tf.estimator reads it": (
        {"cluster": C, "task": {"type": "worker", "index": "1"}},
        dict(cluster=C, task_id=1, master="grpc://h4:4", is_chief=False,
             num_worker_replicas=4, num_ps_replicas=2, global_id_in_cluster=2)),
    # tf.estimator fails here (max() arg is an empty sequence): an empty job counts 0.
    "a TFJob with 0 worker replicas, its ps": (
        task("ps", 0, TFJOB_NO_WORKERS), dict(
            cluster=TFJOB_NO_WORKERS, task_type="ps", master="grpc://10.0.0.1:2222",
            is_chief=False, num_worker_replicas=1, num_ps_replicas=1,
            global_id_in_cluster=1)),
    # A TFJob with enableDynamicWorker: the worker sees itself by index.
    "a job given as an object of tasks by index": (
        task("worker", 1, {"chief": ["h0:0"], "worker": {"1": "h4:4"}}),
        dict(cluster={"chief": ["h0:0"], "worker": {1: "h4:4"}}, task_id=1,
             master="grpc://h4:4", is_chief=False, num_worker_replicas=2,
             global_id_in_cluster=2)),
}


def as_given(cluster):
    return {job: dict(tasks) if isinstance(tasks, dict) else list(tasks)
            for job, tasks in cluster.items()}


@pytest.mark.parametrize("tf_config, expected", PLACED.values(), ids=PLACED)
def test_a_task_is_placed_as_tf_estimator_places_it(tf_config, expected):
    placement = place_task(tf_config)
    expected = {**LOCAL, **expected}
    got = {field: getattr(placement, field) for field in expected}
    got["cluster"] = as_given(placement.cluster)
    assert got == expected
    assert placement.service is None


def test_service_is_kept_as_given():
    service = {"key1": [1, 2], "key2": {"a": 3}, "key3": 789}
    assert place_task({"service": service}).service == service
    assert place_task(task("worker", 0, C, service=service)).service == service


# (TF_CONFIG, exception, tf.estimator's words, trainexec's words)
REFUSED = {
    "workers only": ({"cluster": RAY_WORKERS}, ConfigError,
                     'If "cluster" is set in TF_CONFIG, it must have one "chief" node. ',
                     "trainexec.KerasTrainer"),
    "two chiefs": ({"cluster": {"chief": ["h0:0", "host:6:6"], "worker": ["h3:3"]}},
                   ConfigError, 'The "cluster" in TF_CONFIG must have only one "chief" node. ',
                   'lists 2: ["h0:0", "host:6:6"]; keep one chief'),
    "two masters": ({"cluster": {"master": ["h0:0", "h6:6"]}}, ConfigError,
                    'The "cluster" in TF_CONFIG must have only one "master" node. ',
                    "keep one master"),
    "a master and a chief": (task("ps", 1, {**M, "chief": ["h9:9"]}), ConfigError,
                             "If `master` node exists in `cluster`, job `chief` is not "
                             "supported. ", "keep one of them"),
    "an evaluator beside a master": (task("evaluator", 1, SAGEMAKER_PS), ConfigError,
                                     "If `master` node exists in `cluster`, task_type "
                                     "`evaluator` is not supported. ",
                                     "rename cluster.master to cluster.chief"),
    "a cluster but no task": ({"cluster": {"chief": ["h3:3"]}}, ConfigError,
                              'If "cluster" is set in TF_CONFIG, task type must be set. ',
                              'add "type"'),
    "a task without index": ({"cluster": {"chief": ["h3:3"]}, "task": {"type": "chief"}},
                             ConfigError,
                             'If "cluster" is set in TF_CONFIG, task index must be set. ',
                             'add "index", this task\'s 0-based position in cluster.chief'),
    "a negative index": (task("chief", -1, {"chief": ["h3:3"]}), ConfigError,
                         "Task index must be non-negative number. ", "task.index is -1"),
    "an evaluator's negative index": (task("evaluator", -1, {"chief": ["h3:3"]}),
                                      ConfigError, "Task index must be non-negative number. ",
                                      "task.index is -1"),
    "a type the cluster lacks": (task("worker", 0, {"chief": ["h3:3"]}), ConfigError,
                                 "worker is not a valid task_type in the cluster_spec",
                                 "TF_CONFIG cluster has jobs chief. Fix task.type"),
    "an index past the job's end": (task("worker", 3, C), ConfigError,
                                    "3 is not a valid task_id for task_type worker in the "
                                    "cluster_spec", "cluster.worker has 3 tasks"),
    "an index a job given by index lacks": (
        task("worker", 0, {"chief": ["h0:0"], "worker": {"1": "h4:4"}}), ConfigError,
        "0 is not a valid task_id for task_type worker", "cluster.worker lists indices 1"),
    "a chief but no cluster": ({"task": {"type": "chief", "index": 0}}, ConfigError,
                               'If "cluster" is not set in TF_CONFIG, task type must be '
                               'WORKER. ', 'leave "task" out'),
    "a master but no cluster": ({"task": {"type": "master", "index": 0}}, ConfigError,
                                'If "cluster" is not set in TF_CONFIG, task type must be '
                                'WORKER. ', 'add "cluster" listing every task'),
    "worker 1 but no cluster": ({"task": {"type": "worker", "index": 1}}, ConfigError,
                                'If "cluster" is not set in TF_CONFIG, task index must be 0. ',
                                "task.index is 1 and there is no cluster"),
    "a service that is not an object": ({"service": 789}, TypeError,
                                        'If "service" is set in TF_CONFIG, it must be a dict. '
                                        "Given <class 'int'>", 'leave "service" out'),
    # trainexec's own: what tf.estimator fails on with a TypeError or AttributeError
    "a cluster that is not an object": ({"cluster": ["h0:0"]}, ConfigError,
                                        'TF_CONFIG cluster is ["h0:0"]', "an object of jobs"),
    "a job that is not a list": ({"cluster": {"chief": "h0:0"}}, ConfigError,
                                 'TF_CONFIG cluster.chief is "h0:0"', "a list of"),
    "an address that is not a string": ({"cluster": {"chief": [2222]}}, ConfigError,
                                        "TF_CONFIG cluster.chief[0] is 2222",
                                        '"host:port" string'),
    "a job keyed by something else than an index": (
        {"cluster": {"chief": ["h0:0"], "worker": {"first": "h4:4"}}}, ConfigError,
        'TF_CONFIG cluster.worker key "first" is not a task index', '{"1": "host1:2222"}'),
    "a type that is not a string": (task(["chief"], 0, {"chief": ["h0:0"]}), ConfigError,
                                    'TF_CONFIG task.type is ["chief"]', "one of chief or"),
    "an index that is not a number": (task("chief", "first", {"chief": ["h0:0"]}),
                                      ConfigError, 'TF_CONFIG task.index is "first"',
                                      "non-negative integer"),
    "a task that is not an object": ({"task": "worker"}, ConfigError,
                                     'TF_CONFIG task is "worker"', '{"type": "worker"'),
    "a session_master that is not a string": ({"session_master": 1}, ConfigError,
                                              "TF_CONFIG session_master is 1",
                                              "session target string"),
}


@pytest.mark.parametrize("tf_config, error, tf_words, fix", REFUSED.values(), ids=REFUSED)
def test_a_tf_config_tf_estimator_refuses_is_refused_with_its_words_and_the_fix(
        tf_config, error, tf_words, fix):
    with pytest.raises(error) as raised:
        place_task(tf_config)
    assert type(raised.value) is error
    assert str(raised.value).startswith(tf_words)
    assert fix in str(raised.value)


@pytest.mark.parametrize("task_type, index", [("chief", 0), ("worker", 1), ("ps", 0)])
def test_every_training_task_of_a_tfjob_is_placed(task_type, index):
    placement = place_task(task(task_type, index, TFJOB))
    assert placement.master == "grpc://" + TFJOB[task_type][index]
    # The evaluator listed in the cluster is numbered with the rest, as in tf.estimator.
    assert placement.global_id_in_cluster == {"chief": 0, "worker": 1 + 1 + index,
                                              "ps": 4}[task_type]
    assert (placement.num_worker_replicas, placement.num_ps_replicas) == (3, 1)


@pytest.mark.parametrize("environ, expected", [
    ({}, {}),
    ({"TF_CONFIG": "  "}, {}),
    ({"TF_CONFIG": json.dumps(task("worker", 1, C))}, task("worker", 1, C)),
])
def test_tf_config_is_read_from_the_environment(environ, expected):
    assert read_tf_config(environ) == expected


@pytest.mark.parametrize("text, words", [
    ('{"cluster": ', "TF_CONFIG is not valid JSON"),
    ('["worker"]', 'TF_CONFIG is ["worker"]: expected a JSON object'),
])
def test_a_tf_config_that_is_not_an_object_is_refused(text, words):
    with pytest.raises(ConfigError, match=words.replace("[", r"\[")):
        read_tf_config({"TF_CONFIG": text})
