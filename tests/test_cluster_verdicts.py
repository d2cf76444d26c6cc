"""trainexec/cluster_verdicts.py: the summary `trainexec tfconfig` prints, which trainers
can train a cluster's shape, and where TF 2.15's RunConfig fails on an empty job."""

import pytest

from trainexec import ClusterConfig
from trainexec.cluster_verdicts import explain, run_config_fails_on, trainer_support
from tf_configs import CLUSTER, TFJOB_MASTER_EVALUATOR, H, tf_config


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
    pytest.param(TFJOB_MASTER_EVALUATOR, "master", 0,
                 (True, "master:0 trains and evaluates after checkpoint saves (no evaluator"),
                 (False, 'tf.distribute has no "master" job; rename it "chief"'),
                 id="tfjob-master-evaluator"),
]


@pytest.mark.parametrize("cluster,task_type,index,estimator,keras", SUPPORT)
def test_trainer_support_is_judged_from_the_cluster_shape(cluster, task_type, index,
                                                          estimator, keras):
    config = ClusterConfig.from_json(tf_config(task_type, index, cluster))
    support = trainer_support(config)
    assert set(support) == {"Estimator", "Keras"}
    for trainer, (runs, words) in (("Estimator", estimator), ("Keras", keras)):
        assert support[trainer].startswith("yes" if runs else "no: "), support[trainer]
        assert words in support[trainer]
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
