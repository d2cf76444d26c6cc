"""trainexec/cluster/verdicts.py: the summary `trainexec tfconfig` prints, which producer's
shape a TF_CONFIG has and what trainexec rewrote, which trainers can train a cluster's shape,
and where TF 2.15's RunConfig fails on an empty job."""

import pytest

from trainexec import ClusterConfig
from trainexec.cluster.verdicts import (GENERIC, LOCAL_RUN, MASTER_AS_CHIEF,
                                        SAGEMAKER_PARAMETER_SERVER, TFJOB,
                                        TFJOB_DYNAMIC_WORKER, TRAINEXEC_LAUNCH, WORKERS_ONLY,
                                        ClusterShape, explain, recognise, run_config_fails_on,
                                        trainer_support)
from tf_configs import (CLUSTER, RAY_WORKERS, SAGEMAKER_MWMS, SAGEMAKER_PS, TFJOB as TFJOB_CLUSTER,
                        TFJOB_MASTER_EVALUATOR, TFJOB_NO_WORKERS, H, tf_config, tfjob_address,
                        tfjob_dynamic_view)

pytestmark = pytest.mark.tf_line


def test_explain_names_role_and_marks_task():
    text = explain(ClusterConfig.from_json(tf_config("worker", 1)))
    assert "role: worker:1" in text
    assert "h2:2222   <- this task" in text


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
    # Keras hands the master to tf.distribute as the chief; the evaluator still cannot run.
    pytest.param(TFJOB_MASTER_EVALUATOR, "master", 0,
                 (True, "master:0 trains and evaluates after checkpoint saves (no evaluator"),
                 (True, "ParameterServerStrategy; master:0 coordinates (handed to "
                  "tf.distribute as chief:0); no evaluator can run beside a master: rename "
                  "the TFJob's Master to Chief to keep one"),
                 id="tfjob-master-evaluator"),
    pytest.param(SAGEMAKER_PS, "ps", 1,
                 (True, "master:0 trains and evaluates after checkpoint saves"),
                 (True, "ParameterServerStrategy; master:0 coordinates (handed to "
                  "tf.distribute as chief:0)"), id="sagemaker-parameter-server"),
    pytest.param({"master": [H[0]], "worker": [H[1], H[2]]}, "worker", 1, (True, "master:0"),
                 (True, "MultiWorkerMirroredStrategy; master:0 leads (handed to "
                  "tf.distribute as chief:0)"), id="master-workers"),
    pytest.param({"master": [H[0]], "ps": [H[1]], "worker": []}, "master", 0, (True, ""),
                 (False, "needs at least one worker"), id="master-ps-without-workers"),
    pytest.param({"worker": {"1": H[1]}, "ps": [H[2], H[3]]}, "worker", 1,
                 (False, "this task sees only part of the cluster (a job given as {index: "
                  "address}: a TFJob with enableDynamicWorker: true) and its chief sees none "
                  "of it, so no chief can lead training or save checkpoints; set "
                  "enableDynamicWorker: false"),
                 (False, "set enableDynamicWorker: false (or leave it out) in the TFJob spec"),
                 id="tfjob-dynamic-worker-view"),
    pytest.param({"worker": {}, "ps": [H[3]]}, "ps", 1, (False, "enableDynamicWorker: false"),
                 (False, "enableDynamicWorker: false"), id="tfjob-dynamic-ps-view"),
]


@pytest.mark.parametrize("cluster,task_type,index,estimator,keras", SUPPORT)
def test_trainer_support_is_judged_from_the_cluster_shape(cluster, task_type, index,
                                                          estimator, keras):
    config = ClusterConfig.from_json(tf_config(task_type, index, cluster))
    support = trainer_support(config)
    assert set(support) == {"Estimator", "Keras"}
    for trainer, (runs, words) in (("Estimator", estimator), ("Keras", keras)):
        assert support[trainer].trains is runs
        assert str(support[trainer]).startswith("yes" if runs else "no: "), support[trainer]
        assert words in str(support[trainer])
        assert f"  {trainer}: {support[trainer]}" in explain(config)

def test_no_trainer_support_without_a_training_cluster():
    assert trainer_support(ClusterConfig.from_env({})) == {}
    lone_evaluator = ClusterConfig.from_json('{"task": {"type": "evaluator", "index": 0}}')
    assert trainer_support(lone_evaluator) == {}
    assert "trainers" not in explain(lone_evaluator)


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
    assert run_config_fails_on(config) == empty_job
    explained = explain(config)
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


# Which producer's shape each TF_CONFIG has, and what trainexec rewrote: (TF_CONFIG text,
# started by trainexec launch) -> ClusterShape.
EMPTY_WORKER = "empty jobs dropped (treated as absent): worker"
OUTSIDE = ("evaluator:0 left out of the training cluster the servers and tf.distribute are "
           "given (an evaluator only reads checkpoints)")
CLOUD = dict(environment="cloud")
SHAPES = [
    pytest.param(tf_config("chief", 0, TFJOB_CLUSTER, **CLOUD), False,
                 ClusterShape(TFJOB, (OUTSIDE,)), id="tfjob-chief"),
    pytest.param(tf_config("evaluator", 0, TFJOB_CLUSTER, **CLOUD), False,
                 ClusterShape(TFJOB, (OUTSIDE,)), id="tfjob-evaluator"),
    pytest.param(tf_config("chief", 0, {"chief": [tfjob_address("chief", 0)], "worker": [],
                                        "ps": [tfjob_address("ps", 0)]}, **CLOUD), False,
                 ClusterShape(TFJOB, (EMPTY_WORKER,)), id="tfjob-0-workers"),
    pytest.param(tf_config("master", 0, {"master": [tfjob_address("master", 0)],
                                         "worker": [tfjob_address("worker", 0)]},
                           **CLOUD), False,
                 ClusterShape(TFJOB, (MASTER_AS_CHIEF,)), id="tfjob-master"),
    # A custom cluster domain (CUSTOM_CLUSTER_DOMAIN) and another port are still a TFJob's.
    pytest.param(tf_config("worker", 0, {"worker": ["j2-worker-0.team-a.svc.cluster.local:9000"]},
                           **CLOUD), False, ClusterShape(TFJOB), id="tfjob-cluster-domain"),
    # TFJob's service names without "environment": "cloud", or with another job's name.
    pytest.param(tf_config("chief", 0, TFJOB_CLUSTER), False,
                 ClusterShape(GENERIC, (OUTSIDE,)), id="tfjob-names-without-environment"),
    pytest.param(tf_config("worker", 0, {"chief": [tfjob_address("worker", 0)],
                                         "worker": [tfjob_address("worker", 1)]}, **CLOUD),
                 False, ClusterShape(GENERIC), id="tfjob-like-names-of-other-tasks"),
    pytest.param(tfjob_dynamic_view("worker", 1), False, ClusterShape(
        TFJOB_DYNAMIC_WORKER, ("sparse cluster.worker kept as {index: address}: this task "
                               "sees only worker:1",)), id="tfjob-dynamic-worker"),
    pytest.param(tfjob_dynamic_view("ps", 1), False, ClusterShape(TFJOB_DYNAMIC_WORKER, (
        EMPTY_WORKER, f'cluster.ps read as ps:1\'s own address only, {{"1": '
        f'"{tfjob_address("ps", 1)}"}} (a TFJob ps with enableDynamicWorker sees only '
        "itself, whatever its index)")), id="tfjob-dynamic-ps-1"),
    pytest.param(tfjob_dynamic_view("ps", 0), False, ClusterShape(TFJOB_DYNAMIC_WORKER, (
        EMPTY_WORKER, f'cluster.ps read as ps:0\'s own address only, {{"0": '
        f'"{tfjob_address("ps", 0)}"}} (a TFJob ps with enableDynamicWorker sees only '
        "itself, whatever its index)")), id="tfjob-dynamic-ps-0"),
    # A sparse job beside other jobs is no TFJob's: generic, still said.
    pytest.param(tf_config("worker", 1, {"chief": [H[0]], "worker": {"1": H[1]}}), False,
                 ClusterShape(GENERIC, ("sparse cluster.worker kept as {index: address}: "
                                        "this task sees only worker:1",)),
                 id="generic-sparse"),
    pytest.param(tf_config("master", 0, SAGEMAKER_PS, **CLOUD), False,
                 ClusterShape(SAGEMAKER_PARAMETER_SERVER, (MASTER_AS_CHIEF,)),
                 id="sagemaker-ps-master"),
    pytest.param(tf_config("ps", 1, SAGEMAKER_PS, **CLOUD), False,
                 ClusterShape(SAGEMAKER_PARAMETER_SERVER, (MASTER_AS_CHIEF,)),
                 id="sagemaker-ps-ps"),
    pytest.param(tf_config("master", 0, {"master": [H[0]], "ps": [H[1]], "worker": [H[2]]}),
                 False, ClusterShape(GENERIC, (MASTER_AS_CHIEF,)), id="master-ps-elsewhere"),
    pytest.param(tf_config("worker", 1, SAGEMAKER_MWMS), False, ClusterShape(WORKERS_ONLY),
                 id="sagemaker-mwms"),
    pytest.param(tf_config("worker", 0, RAY_WORKERS), False, ClusterShape(WORKERS_ONLY),
                 id="ray"),
    pytest.param(tf_config("worker", 0, {"chief": ["127.0.0.1:4001"],
                                         "worker": ["127.0.0.1:4002"]}), True,
                 ClusterShape(TRAINEXEC_LAUNCH), id="trainexec-launch"),
    pytest.param(tf_config("worker", 0, CLUSTER), False, ClusterShape(GENERIC), id="generic"),
    pytest.param("", False, ClusterShape(LOCAL_RUN), id="local"),
]


@pytest.mark.parametrize("text,launched,shape", SHAPES)
def test_recognised_shape_and_rewrites(text, launched, shape):
    config = ClusterConfig.from_json(text)
    assert recognise(config, launched=launched) == shape
    lines = explain(config, launched=launched).splitlines()
    if shape.producer == LOCAL_RUN:
        assert lines == ["role: local (no cluster in TF_CONFIG): train and evaluate in "
                         "this one process"]
        return
    assert lines[0] == f"recognised shape: {shape.producer}"
    if shape.rewrites:
        start = lines.index("rewrote:")
        assert lines[start + 1:start + 1 + len(shape.rewrites)] == [
            f"  {rewrite}" for rewrite in shape.rewrites]
        assert not lines[start + 1 + len(shape.rewrites)].startswith("  ")
    else:
        assert "rewrote: nothing (TF_CONFIG used as given)" in lines


def test_explain_lists_a_sparse_view_by_task_index():
    config = ClusterConfig.from_json(tfjob_dynamic_view("worker", 1))
    lines = explain(config).splitlines()
    assert lines[1:5] == [
        "cluster (grpc):",
        f"  ps:0         {tfjob_address('ps', 0)}",
        f"  ps:1         {tfjob_address('ps', 1)}",
        f"  worker:1     {tfjob_address('worker', 1)}   <- this task"]
    assert "role: worker:1 (a training task; sees only part of the cluster)" in lines
    ps = explain(ClusterConfig.from_json(tfjob_dynamic_view("ps", 1))).splitlines()
    assert f"  ps:1         {tfjob_address('ps', 1)}   <- this task" in ps

def test_empty_jobs_are_said_as_a_rewrite():
    # The empty-jobs rewrite replaced the old "empty jobs (treated as absent)" line.
    text = explain(ClusterConfig.from_json(tf_config("ps", 0, TFJOB_NO_WORKERS)))
    assert "  empty jobs dropped (treated as absent): evaluator, worker" in text.splitlines()


# The Estimator verdicts of the producer shapes, against the real RunConfig (TF 2.15).
ESTIMATOR_SHAPES = [
    pytest.param(tf_config("master", 0, SAGEMAKER_PS, **CLOUD), True, id="sagemaker-master"),
    pytest.param(tf_config("ps", 1, SAGEMAKER_PS, **CLOUD), True, id="sagemaker-ps-1"),
    pytest.param(tf_config("worker", 0, SAGEMAKER_PS, **CLOUD), True, id="sagemaker-worker"),
    pytest.param(tf_config("worker", 1, TFJOB_CLUSTER, **CLOUD), True, id="tfjob-worker"),
    pytest.param(tf_config("evaluator", 0, TFJOB_CLUSTER, **CLOUD), True,
                 id="tfjob-evaluator"),
    pytest.param(tfjob_dynamic_view("worker", 1), False, id="tfjob-dynamic-worker"),
    pytest.param(tfjob_dynamic_view("ps", 1), False, id="tfjob-dynamic-ps"),
]


@pytest.mark.estimator
@pytest.mark.parametrize("text,runs", ESTIMATOR_SHAPES)
def test_estimator_verdict_of_each_shape_matches_run_config(monkeypatch, text, runs):
    import tensorflow as tf

    config = ClusterConfig.from_json(text)
    assert trainer_support(config)["Estimator"].trains is runs
    assert str(trainer_support(config)["Estimator"]).startswith("yes" if runs else "no: ")
    for given in (text, config.to_json()):  # as the producer wrote it, and normalised
        monkeypatch.setenv("TF_CONFIG", given)
        if not runs:
            with pytest.raises(ValueError, match='must have one "chief" node'):
                tf.estimator.RunConfig()
            continue
        run_config = tf.estimator.RunConfig()
        assert (run_config.task_type, run_config.task_id) == (config.task_type,
                                                              config.task_index)
        if config.task_type != "evaluator":
            assert run_config.is_chief == config.is_chief
            assert run_config.num_ps_replicas == config.num_ps
            assert run_config.num_worker_replicas == config.num_workers
