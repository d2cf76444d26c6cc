"""With an Estimator, the cluster and role come from its RunConfig, as in tf.estimator: a
RunConfig built under one TF_CONFIG and run under another runs as the RunConfig says, with
one warning naming both. A KerasTrainer keeps reading TF_CONFIG. Real RunConfigs and
Estimators (TensorFlow 2.15 line) where the test needs them."""

import json
import logging

import pytest

from sidecar_programs import toy
from tf_configs import CLUSTER, tf_config
from trainexec import EvalSpec, KerasTrainer, TrainSpec, TrainingExecutor
from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.trainer import EVALUATE, SERVE, TRAIN_AND_EVALUATE

pytestmark = pytest.mark.tf_line

WARNING_START = "estimator.config (the Estimator's RunConfig) is for "


def input_fn():
    return {}, None


def run_config(monkeypatch, text=None):
    """A real tf.estimator.RunConfig built while TF_CONFIG is `text` (None: unset);
    TF_CONFIG is unset again afterwards."""
    import tensorflow as tf

    if text is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", text)
    config = tf.estimator.RunConfig()
    monkeypatch.delenv("TF_CONFIG", raising=False)
    return config


def estimator(tmp_path, config):
    import tensorflow as tf

    def model_fn(features, labels, mode):
        raise AssertionError("not trained in these tests")

    return tf.estimator.Estimator(model_fn, model_dir=str(tmp_path), config=config)


def executor(model, **kwargs):
    return TrainingExecutor(model, TrainSpec(input_fn, max_steps=10), EvalSpec(input_fn),
                            **kwargs)


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and r.getMessage().startswith(WARNING_START)]


@pytest.mark.estimator
def test_run_config_built_for_the_evaluator_runs_the_evaluator_when_tf_config_is_gone(
        tmp_path, monkeypatch, caplog):
    config = run_config(monkeypatch, tf_config("evaluator", 0))
    ex = executor(estimator(tmp_path, config))
    assert ex.cluster.task_name == "evaluator:0"
    assert ex.plan().action == EVALUATE
    [warning] = warnings_of(caplog)
    assert "is for evaluator:0" in warning and "TF_CONFIG now says a local run" in warning
    assert "running as evaluator:0, as tf.estimator does" in warning


@pytest.mark.estimator
def test_evaluator_run_config_agrees_with_the_tf_config_it_was_built_under(
        tmp_path, monkeypatch, caplog):
    # A RunConfig keeps no cluster for an evaluator: the same task is agreement.
    config = run_config(monkeypatch, tf_config("evaluator", 0))
    monkeypatch.setenv("TF_CONFIG", tf_config("evaluator", 0))
    ex = executor(estimator(tmp_path, config))
    assert ex.cluster == ClusterConfig.from_json(tf_config("evaluator", 0))
    assert dict(ex.cluster.cluster) == {job: tuple(a) for job, a in CLUSTER.items()}
    assert warnings_of(caplog) == []


@pytest.mark.estimator
def test_local_run_config_stays_local_under_a_later_tf_config(tmp_path, monkeypatch, caplog):
    config = run_config(monkeypatch, None)
    monkeypatch.setenv("TF_CONFIG", tf_config("ps", 0))
    ex = executor(estimator(tmp_path, config))
    assert ex.cluster.task_name == "local" and not ex.cluster.is_distributed
    assert ex.plan().action == TRAIN_AND_EVALUATE
    [warning] = warnings_of(caplog)
    assert "is for a local run (no cluster), but TF_CONFIG now says ps:0 of cluster" in warning
    assert "build the RunConfig after setting TF_CONFIG" in warning


@pytest.mark.estimator
def test_agreeing_run_config_and_tf_config_warn_nothing(tmp_path, monkeypatch, caplog):
    config = run_config(monkeypatch, tf_config("ps", 0, environment="cloud"))
    monkeypatch.setenv("TF_CONFIG", tf_config("ps", 0, environment="cloud"))
    ex = executor(estimator(tmp_path, config))
    assert ex.cluster == ClusterConfig.from_json(tf_config("ps", 0, environment="cloud"))
    assert ex.plan().action == SERVE
    assert warnings_of(caplog) == []


@pytest.mark.estimator
def test_google_environment_is_read_at_call_time_as_tf_estimator_does(tmp_path, monkeypatch):
    config = run_config(monkeypatch, tf_config("worker", 1))
    monkeypatch.setenv("TF_CONFIG", tf_config("worker", 1, environment="google"))
    ex = executor(estimator(tmp_path, config))
    assert ex.cluster.task_name == "worker:1" and ex.cluster.is_google_environment
    assert not ex.plan().starts_server  # the platform starts training servers there


@pytest.mark.estimator
def test_run_config_cluster_is_validated_like_tf_config(tmp_path, monkeypatch):
    bad = {"chief": ["h0:0"], "worker": ["h1:2222"]}
    config = run_config(monkeypatch, tf_config("worker", 0, cluster=bad))
    monkeypatch.delenv("TF_CONFIG", raising=False)  # the error is the RunConfig's, not TF_CONFIG's now
    with pytest.raises(ConfigError, match=r'^estimator.config \(the Estimator\'s RunConfig\) '
                       r'cluster.chief\[0\] "h0:0" has port 0') as raised:
        executor(estimator(tmp_path, config))
    assert "build the RunConfig again" in str(raised.value)


@pytest.mark.estimator
def test_explicit_cluster_wins_over_the_run_config_with_a_warning(tmp_path, monkeypatch,
                                                                   caplog):
    config = run_config(monkeypatch, tf_config("worker", 1))
    given = ClusterConfig.from_json(tf_config("chief", 0))
    ex = executor(estimator(tmp_path, config), cluster=given)
    assert ex.cluster == given
    [warning] = warnings_of(caplog)
    assert "worker:1 of cluster" in warning
    assert "but the `cluster` argument says chief:0 of cluster" in warning
    assert warning.endswith("running as chief:0")


def test_keras_trainer_keeps_reading_tf_config(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TF_CONFIG", tf_config("evaluator", 0))
    trainer = KerasTrainer(toy.build_model, model_dir=str(tmp_path))
    ex = executor(trainer)
    assert ex.cluster == ClusterConfig.from_json(tf_config("evaluator", 0))
    monkeypatch.setenv("TF_CONFIG", json.dumps({}))
    assert executor(trainer).cluster.task_name == "local"
    assert warnings_of(caplog) == []
