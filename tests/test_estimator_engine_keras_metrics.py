"""Keras `Metric` objects in `eval_metric_ops` (tf_keras, Keras 2.15 and Keras 3, as
tf.estimator 2.x takes them): updated once per batch, read at the end, started afresh
for every checkpoint evaluated, and never written to a checkpoint."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.estimator_engine.keras_metrics import is_keras_metric, metric_pair

pytestmark = [pytest.mark.keras, pytest.mark.tf_line]

VALUES = np.arange(1.0, 11.0, dtype="float32")  # batches of 4: [1..4], [5..8], [9, 10]


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": VALUES}, VALUES)).batch(4)


def make_model_fn(api):
    """x times w (1 at first, one more each step), its mean and sum as Keras metrics."""

    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.ones_initializer())
        x = features["x"] * w
        loss = tf.reduce_mean(tf.square(x - labels))
        mean, total = tf.keras.metrics.Mean(), tf.keras.metrics.Sum()
        mean.update_state(x)
        total.update_state(x)
        step = tf.compat.v1.train.get_global_step()
        train_op = tf.group(tf.compat.v1.assign_add(w, 1.0), tf.compat.v1.assign_add(step, 1))
        return api.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops={
            "mean": mean, "sum": total, "v1_mean": tf.compat.v1.metrics.mean(x)})

    return model_fn


def test_every_checkpoint_is_evaluated_afresh(tmp_path, no_tf_config):
    estimator = te.Estimator(make_model_fn(te), model_dir=str(tmp_path))
    estimator.train(input_fn, steps=1)  # w: 1 -> 2, checkpoint 1
    first = estimator.latest_checkpoint()
    estimator.train(input_fn, steps=1)  # w: 3, checkpoint 2
    second = estimator.latest_checkpoint()
    evaluation = estimator.persistent_evaluation(input_fn)  # one graph, two checkpoints
    try:
        at_first, at_second = evaluation.evaluate(first), evaluation.evaluate(second)
        again = evaluation.evaluate(first)
    finally:
        evaluation.close()
    assert (at_first["mean"], at_first["sum"]) == pytest.approx((11.0, 110.0))
    assert (at_second["mean"], at_second["sum"]) == pytest.approx((16.5, 165.0))
    assert at_second["mean"] == pytest.approx(at_second["v1_mean"])
    assert (again["mean"], again["sum"]) == pytest.approx((11.0, 110.0))  # reset each time
    assert estimator.evaluate(input_fn, steps=1)["sum"] == pytest.approx(30.0)  # 1 batch
    # The metrics' variables are the evaluation's own: no checkpoint holds them.
    assert estimator.get_variable_names() == ["global_step", "w"]


def test_a_metric_becomes_a_pair_of_the_graph_with_local_variables():
    with tf.Graph().as_default() as graph:
        mean = tf.keras.metrics.Mean()
        mean.update_state(tf.constant([1.0, 3.0]))
        assert is_keras_metric(mean) and not is_keras_metric((1, 2))
        value, update = metric_pair("mean", mean)
        assert value.graph is graph and update.graph is graph
        keys = tf.compat.v1.GraphKeys
        names = {key: {v.name for v in tf.compat.v1.get_collection(key)}
                 for key in (keys.GLOBAL_VARIABLES, keys.LOCAL_VARIABLES,
                             keys.METRIC_VARIABLES)}
        assert len(names[keys.LOCAL_VARIABLES]) == 2
        assert names[keys.METRIC_VARIABLES] == names[keys.LOCAL_VARIABLES]
        assert not names[keys.GLOBAL_VARIABLES] & names[keys.LOCAL_VARIABLES]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.local_variables_initializer())
            session.run(update)
            session.run(update)
            assert session.run(value) == pytest.approx(2.0)


def updated_elsewhere():
    with tf.Graph().as_default():
        metric = tf.keras.metrics.Mean(name="elsewhere")
        metric.update_state(tf.constant(1.0))
    return metric


def never_updated():
    with tf.Graph().as_default():
        return tf.keras.metrics.Mean(name="idle")


@pytest.mark.parametrize("make, error, words", [
    (never_updated, ValueError, r'Please call update_state\(...\) on the "idle" metric'),
    (updated_elsewhere, ValueError, "must be from the default graph"),
])
def test_metric_rows(make, error, words):
    metric = make()
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(error, match=words) as raised:
            te.EstimatorSpec("eval", loss=loss, eval_metric_ops={"m": metric})
        assert "model_fn" in str(raised.value)  # where to call update_state, or build it


class Metric:  # stands for a Keras 3 metric on a backend other than TensorFlow
    __module__ = "keras.src.metrics.metric"

    name = "jax_mean"
    variables = [type("Variable", (), {"value": np.zeros(())})()]


def test_a_keras_metric_on_another_backend_is_refused_naming_the_fixes():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="jax_mean") as raised:
            te.EstimatorSpec("eval", loss=tf.constant(1.0), eval_metric_ops={"m": Metric()})
    for fix in ("KERAS_BACKEND=tensorflow", "TF_USE_LEGACY_KERAS=1",
                "tf.compat.v1.metrics"):
        assert fix in str(raised.value)


@pytest.mark.estimator
def test_keras_metrics_evaluate_as_in_tf_estimator(tmp_path, no_tf_config):
    """On the 2.15 line, tf.estimator and trainexec.estimator give the same values."""
    results = []
    for api in (tf.estimator, te):
        estimator = api.Estimator(make_model_fn(api), model_dir=str(tmp_path / api.__name__))
        estimator.train(input_fn, steps=2)
        results.append(estimator.evaluate(input_fn))
    theirs, ours = results
    assert set(ours) == set(theirs)
    for key in theirs:
        assert ours[key] == pytest.approx(theirs[key]), key
