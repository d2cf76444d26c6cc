"""A correct user program, as a user's type checker sees it: mypy must report nothing.

Checked, never run, by tests/test_typing.py (`mypy --config-file tests/typing/mypy.ini`,
strict): every call below uses trainexec's public API the documented way, so an error
here means an annotation went wrong, and `assert_type` lines fail if a public name or
result regresses to `Any`. Not a test module (pytest does not collect it).
"""

from __future__ import annotations

import sys
from typing import Any, Mapping

import tensorflow as tf  # untyped to mypy: tf's values are Any
from typing_extensions import assert_type

import trainexec
import trainexec.estimator
from trainexec.exporters import BestExporter, FinalExporter, LatestExporter
from trainexec.launch import JobResult, LocalCluster, TaskOutcome


def build_model() -> tf.keras.Model:
    model = tf.keras.Sequential([tf.keras.layers.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def input_fn() -> tf.data.Dataset:
    features = tf.random.normal((64, 4))
    return tf.data.Dataset.from_tensor_slices((features, tf.reduce_sum(features, 1))).batch(8)


def keras_job(model_dir: str) -> None:
    trainer = trainexec.KerasTrainer(build_model, model_dir=model_dir,
                                     save_checkpoints_steps=100, keep_checkpoint_max=3,
                                     log_step_count_steps=None, summaries=False)
    train_spec = trainexec.TrainSpec(input_fn, max_steps=1000)
    eval_spec = trainexec.EvalSpec(input_fn, steps=None, throttle_secs=0,
                                   exporters=[LatestExporter(keep=2), FinalExporter()])
    result = trainexec.train_and_evaluate(trainer, train_spec, eval_spec, poll_secs=0.5,
                                          evaluator_idle_timeout_secs=600)
    assert_type(result, trainexec.TrainResult | None)
    if result is not None:  # a local run or the evaluator; None in the other roles
        loss: float = result.metrics["loss"]
        print(f"loss {loss:.3f}, exported {result.exports}")
    assert_type(trainer.model_dir, str)
    assert_type(train_spec.max_steps, int | None)


def model_fn(features: Any, labels: Any, mode: str) -> trainexec.estimator.EstimatorSpec:
    predictions = tf.compat.v1.layers.dense(features, 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return trainexec.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def estimator_job(model_dir: str) -> None:
    estimator = trainexec.estimator.Estimator(
        model_fn, config=trainexec.estimator.RunConfig(model_dir=model_dir,
                                                       save_checkpoints_steps=100))
    result = trainexec.train_and_evaluate(
        estimator, trainexec.estimator.TrainSpec(input_fn, max_steps=300),
        trainexec.estimator.EvalSpec(input_fn, steps=10, name="holdout", throttle_secs=30))
    if result is not None:
        metrics, exports = result  # a (metrics, exports) pair, as tf.estimator's
        print(metrics["global_step"], exports)
    # tf.estimator's own Estimator and specs (untyped: Any) are taken as they are.
    if hasattr(tf, "estimator"):
        tf_estimator = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")])
        trainexec.train_and_evaluate(tf_estimator, tf.estimator.TrainSpec(input_fn),
                                     tf.estimator.EvalSpec(input_fn),
                                     train_hooks=[tf.estimator.StepCounterHook()])


def sidecar(checkpoint_dir: str) -> Mapping[str, Any] | None:
    evaluator = trainexec.SidecarEvaluator(
        build_model(), input_fn(), checkpoint_dir, steps=10, throttle_secs=30.0,
        exporters=[BestExporter(metric="loss", mode="min")], idle_timeout_secs=None)
    metrics = evaluator.start()
    assert_type(metrics, dict[str, Any] | None)
    return metrics


def local_cluster(program: str) -> int:
    with LocalCluster([sys.executable, program], workers=2, ps=1, evaluator=True,
                      max_restarts=1, grace_secs=5.0) as cluster:
        result = cluster.wait(timeout=600)
    assert_type(result, JobResult)
    print(result.summary())
    if not result.ok:
        print(f"{result.failed_task} exited {result.exit_code}: {result.reason}")
    for task in result.tasks:
        assert_type(task, TaskOutcome)
        print(task.name, task.returncode, task.restarts, f"{task.run_secs:.1f}s")
    return result.exit_status


if __name__ == "__main__":
    keras_job(sys.argv[1])
