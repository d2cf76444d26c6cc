"""TF_CONFIG parsing: valid layouts, one row per malformed input, the CLI."""

import dataclasses
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


# TF_CONFIGs real cluster managers write, which TensorFlow trains with: every row
# names a task that runs, and what it knows about its cluster.
H = [f"10.0.0.{i}:2222" for i in range(6)]
TFJOB_NO_WORKERS = {"chief": [H[0]], "worker": [], "ps": [H[1]], "evaluator": []}
TFJOB_MASTER_EVALUATOR = {"master": [H[0]], "worker": [H[1]], "ps": [H[2]],
                          "evaluator": [H[3]]}
TFJOB_TWO_EVALUATORS = {"chief": [H[0]], "worker": [H[1]], "evaluator": [H[3], H[4]]}

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


SUPPORT = [  # cluster, task, (Estimator runs, words), (Keras runs, words)
    pytest.param({"worker": [H[0], H[1]]}, "worker", 1,
                 (False, 'the cluster has no "chief" (or "master") job'),
                 (True, "MultiWorkerMirroredStrategy; worker:0 acts as chief"),
                 id="workers-only"),
    pytest.param({"chief": [H[0]], "worker": [H[1]]}, "chief", 0,
                 (True, ""), (True, "MultiWorkerMirroredStrategy"), id="chief-workers"),
    pytest.param(CLUSTER, "worker", 0, (True, ""),
                 (True, "ParameterServerStrategy; chief:0 coordinates"), id="chief-workers-ps"),
    pytest.param({"worker": [H[0]], "ps": [H[1]]}, "ps", 0,
                 (False, 'the cluster has no "chief"'),
                 (False, 'ParameterServerStrategy (the cluster has ps) needs a "chief"'),
                 id="workers-ps"),
    pytest.param({"chief": [H[0]], "worker": [], "ps": [H[1]]}, "chief", 0, (True, ""),
                 (False, "needs at least one worker; give the TFJob's Worker 1 or more"),
                 id="tfjob-0-workers-with-ps"),
    pytest.param({"chief": [], "worker": [H[1]]}, "worker", 0,
                 (False, "cluster.chief is an empty list"),
                 (True, "worker:0 acts as chief"), id="tfjob-0-chiefs"),
    pytest.param(TFJOB_MASTER_EVALUATOR, "master", 0,
                 (True, "master:0 trains and evaluates after checkpoint saves (no evaluator"),
                 (False, 'tf.distribute has no "master" job; rename it "chief"'),
                 id="tfjob-master-evaluator"),
]


@pytest.mark.parametrize("cluster,task_type,index,estimator,keras", SUPPORT)
def test_trainer_support_is_judged_from_the_cluster_shape(cluster, task_type, index,
                                                          estimator, keras):
    config = ClusterConfig.from_json(tf_config(task_type, index, cluster))
    support = config.trainer_support()
    assert set(support) == {"Estimator", "Keras"}
    for trainer, (runs, words) in (("Estimator", estimator), ("Keras", keras)):
        assert support[trainer].startswith("yes" if runs else "no: "), support[trainer]
        assert words in support[trainer]
        assert f"  {trainer}: {support[trainer]}" in config.explain()


def test_no_trainer_support_without_a_training_cluster():
    assert ClusterConfig.from_env({}).trainer_support() == {}
    lone_evaluator = ClusterConfig.from_json('{"task": {"type": "evaluator", "index": 0}}')
    assert lone_evaluator.trainer_support() == {}
    assert "trainers" not in lone_evaluator.explain()


# Which task's tf.estimator.RunConfig (TF 2.15) fails on an empty job in TF_CONFIG.
RUN_CONFIG_TRAPS = [
    ({"chief": [H[0]], "worker": []}, "chief", 0, None),
    ({"chief": [H[0]], "worker": [], "ps": [H[1]]}, "chief", 0, None),
    ({"chief": [H[0]], "worker": [], "ps": [H[1]]}, "ps", 0, "worker"),
    ({"chief": [H[0]], "worker": [H[1]], "ps": []}, "worker", 0, None),
    ({"chief": [H[0]], "worker": [H[1]], "evaluator": []}, "worker", 0, "evaluator"),
    ({"chief": [H[0]], "worker": [H[1]], "evaluator": []}, "evaluator", 0, None),
    ({"chief": [], "worker": [H[1], H[2]]}, "worker", 1, "chief"),
    ({"master": [H[0]], "worker": [H[1]], "ps": [], "evaluator": []}, "worker", 0,
     "evaluator"),
    (CLUSTER, "ps", 0, None),
]


@pytest.mark.parametrize("cluster,task_type,index,empty_job", RUN_CONFIG_TRAPS)
def test_run_config_failure_on_an_empty_job_is_predicted(cluster, task_type, index,
                                                        empty_job):
    config = ClusterConfig.from_json(tf_config(task_type, index, cluster))
    assert config.run_config_fails_on == empty_job
    explained = config.explain()
    # Told where the Estimator could otherwise run (without a chief it cannot at all).
    told = empty_job is not None and config.has_chief
    assert (f"on the empty cluster.{empty_job}" in explained) == told
    if told:
        assert 'export TF_CONFIG="$(trainexec tfconfig --json)"' in explained


def _check_run_config(config, text, monkeypatch):
    import tensorflow as tf

    monkeypatch.setenv("TF_CONFIG", text)
    run_config = tf.estimator.RunConfig()
    assert (run_config.task_type, run_config.task_id) == (config.task_type, config.task_index)
    if config.task_type != "evaluator":
        # RunConfig's master is local exactly where trainexec starts no server.
        assert (run_config.master == "") == config.is_single_node, text


@pytest.mark.estimator
@pytest.mark.parametrize("cluster,task_type,index,empty_job", RUN_CONFIG_TRAPS)
def test_run_config_failure_prediction_matches_tf_estimator(
        monkeypatch, cluster, task_type, index, empty_job):
    """Against the real RunConfig, built from TF_CONFIG as given and normalised."""
    import tensorflow as tf

    raw = tf_config(task_type, index, cluster)
    config = ClusterConfig.from_json(raw)
    if empty_job is not None:
        monkeypatch.setenv("TF_CONFIG", raw)
        with pytest.raises(ValueError):
            tf.estimator.RunConfig()
    elif config.has_chief:
        _check_run_config(config, raw, monkeypatch)
    if config.has_chief:  # without one RunConfig refuses the cluster, as trainexec does
        normalised = config.to_json()
        _check_run_config(ClusterConfig.from_json(normalised), normalised, monkeypatch)


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
]


@pytest.mark.parametrize("text,words", BAD, ids=[w[:40] for _, w in BAD])
def test_malformed_tf_config_is_explained(text, words):
    with pytest.raises(ConfigError) as info:
        ClusterConfig.from_env({"TF_CONFIG": text})
    assert isinstance(info.value, ValueError)
    assert words in str(info.value)


def _cli(env_tf_config, *args):
    env = dict(os.environ, TF_CONFIG=env_tf_config)
    return subprocess.run([sys.executable, "-m", "trainexec", "tfconfig", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_cli_tfconfig_shows_role():
    done = _cli(tf_config("ps", 0))
    assert done.returncode == 0, done.stderr
    assert "role: ps:0" in done.stdout and "h3:2222   <- this task" in done.stdout


def test_cli_tfconfig_exits_2_on_error():
    done = _cli(tf_config("worker", 5))
    assert done.returncode == 2
    assert 'task.index 5 is out of range for "worker"' in done.stderr


def test_cli_tfconfig_says_which_trainers_run_a_worker_only_cluster():
    done = _cli(tf_config("worker", 1, {"worker": ["h1:2222", "h2:2222"]}))
    assert done.returncode == 0, done.stderr
    assert '  Estimator: no: the cluster has no "chief" (or "master") job' in done.stdout
    assert ("  Keras: yes, MultiWorkerMirroredStrategy; worker:0 acts as chief"
            in done.stdout)


def test_cli_tfconfig_json_leaves_out_empty_jobs():
    done = _cli(tf_config("ps", 0, TFJOB_NO_WORKERS), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"cluster": {"chief": [H[0]], "ps": [H[1]]},
                                       "task": {"type": "ps", "index": 0}}


def test_cli_tfconfig_fails_only_the_evaluator_that_cannot_run():
    chief = _cli(tf_config("chief", 0, TFJOB_TWO_EVALUATORS))
    assert chief.returncode == 0, chief.stderr
    assert "evaluators: only evaluator:0 runs (2 listed)" in chief.stdout
    second = _cli(tf_config("evaluator", 1, TFJOB_TWO_EVALUATORS))
    assert second.returncode == 2
    assert "evaluator:1 cannot run" in second.stderr
