"""A real Estimator through trainexec in one process: local mode as a drop-in for
tf.estimator.train_and_evaluate, and the evaluator role on a finished run."""

import json
import os
import time

import pytest
import tensorflow as tf

import trainexec
from trainexec.examples import estimator_job

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
# every test here builds a real tf.estimator model
pytestmark = [pytest.mark.estimator, pytest.mark.tf_line, pytest.mark.timed]


def finite_input_fn():
    x, y = estimator_job.make_data(640, seed=1)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(32)  # 20 steps


def test_local_drop_in_gives_the_same_metrics(tmp_path, no_tf_config):
    results = {}
    for api in ("tf", "trainexec"):
        model_dir = str(tmp_path / api)
        estimator = estimator_job.make_estimator(model_dir, 40, tf_random_seed=7)
        train_spec, eval_spec = estimator_job.build_specs(120, throttle_secs=0)
        run = tf.estimator.train_and_evaluate if api == "tf" else trainexec.train_and_evaluate
        results[api] = run(estimator, train_spec, eval_spec)
    (tf_metrics, tf_exports), (our_metrics, our_exports) = results["tf"], results["trainexec"]
    assert our_metrics["global_step"] == tf_metrics["global_step"] == 120
    for key in ("accuracy", "loss"):
        assert our_metrics[key] == pytest.approx(tf_metrics[key], rel=1e-4), key
    assert our_metrics["accuracy"] > 0.9
    # The final exporter wrote a loadable SavedModel in both cases.
    assert len(our_exports) == len(tf_exports) == 1
    loaded = tf.saved_model.load(our_exports[0].decode())
    assert "predict" in loaded.signatures
    assert trainexec.read_training_complete(str(tmp_path / "trainexec")).global_step == 120


def test_local_accepts_tf_estimator_specs(tmp_path, no_tf_config):
    estimator = estimator_job.make_estimator(str(tmp_path), 25, tf_random_seed=1)
    train_spec, eval_spec = estimator_job.build_specs(50, throttle_secs=600)
    metrics, _ = trainexec.train_and_evaluate(estimator, train_spec, eval_spec)
    # throttle_secs=600 would skip later evaluations, but the last checkpoint is
    # always evaluated when training ends.
    assert metrics["global_step"] == 50


def test_evaluator_exits_after_last_checkpoint_without_max_steps(tmp_path, monkeypatch):
    """The evaluator task follows a run whose training ends when its data ends."""
    import threading

    model_dir = str(tmp_path)
    train_spec = trainexec.TrainSpec(finite_input_fn, max_steps=None)
    _, eval_spec = estimator_job.build_specs(None, throttle_secs=0)
    evaluator_config = {"cluster": {"chief": ["127.0.0.1:2222"]},
                        "task": {"type": "evaluator", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(evaluator_config))
    evaluator = trainexec.TrainingExecutor(
        estimator_job.make_estimator(model_dir, 10), train_spec, eval_spec,
        evaluator_idle_timeout_secs=120, poll_secs=0.2)
    monkeypatch.delenv("TF_CONFIG")
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(result=evaluator.run()))
    thread.start()
    trainer = estimator_job.make_estimator(model_dir, 10, tf_random_seed=3)
    trainexec.train_and_evaluate(trainer, train_spec, eval_spec)  # ends when data ends
    finished = time.monotonic()
    assert trainexec.read_training_complete(model_dir).global_step == 20
    thread.join(timeout=90)
    assert not thread.is_alive(), "evaluator did not stop after the last checkpoint"
    assert time.monotonic() - finished < 60  # not the 120 s idle timeout
    metrics, exports = outcome["result"]
    assert metrics["global_step"] == 20
    assert len(exports) == 1 and os.path.isdir(exports[0])  # the final export


def test_malformed_tf_config_fails_before_training(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    estimator = estimator_job.make_estimator(str(tmp_path), 10)
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"chief": ["localhost"]}, '
                       '"task": {"type": "chief", "index": 0}}')
    train_spec, eval_spec = estimator_job.build_specs(10)
    with pytest.raises(trainexec.ConfigError, match=r'cluster.chief\[0\] "localhost" is '
                       r'not a "host:port" address'):
        trainexec.train_and_evaluate(estimator, train_spec, eval_spec)
    assert not tf.io.gfile.glob(os.path.join(str(tmp_path), "model.ckpt-*"))
