"""add_metrics: the new Estimator evaluates the old one's metrics and metric_fn's, on
the same model_dir; metric_fn's arguments are checked."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te

pytestmark = pytest.mark.tf_line

X = np.arange(8, dtype=np.float32)[:, None]
Y = (X > 3).astype(np.float32)


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(4)


def model_fn(features, labels, mode):
    kernel = tf.compat.v1.get_variable("k", [1, 1], initializer=tf.compat.v1.zeros_initializer())
    return te.BinaryClassHead().create_estimator_spec(
        features=features, mode=mode, labels=labels,
        logits=tf.matmul(features["x"], kernel) - 1.0,
        optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.1))


def test_metric_fn_adds_metrics(tmp_path, no_tf_config):
    estimator = te.Estimator(model_fn, model_dir=str(tmp_path))
    estimator.train(input_fn, steps=2)

    def my_metrics(labels, predictions, features, config):
        assert config.model_dir == str(tmp_path)
        mean = tf.compat.v1.metrics.mean(features["x"])
        return {"x_mean": mean,
                "my_accuracy": tf.compat.v1.metrics.accuracy(
                    labels, tf.cast(predictions["class_ids"], tf.float32))}

    extended = te.add_metrics(estimator, my_metrics)
    assert extended.model_dir == estimator.model_dir
    results = extended.evaluate(input_fn)
    assert results["x_mean"] == pytest.approx(3.5)
    assert results["my_accuracy"] == pytest.approx(results["accuracy"])
    assert results["global_step"] == 2


def test_metric_fn_taking_other_arguments_is_refused(tmp_path):
    def metric_fn(labels, logits):
        return {}

    with pytest.raises(ValueError, match=r"has following not expected args: \['logits'\]"):
        te.add_metrics(te.Estimator(model_fn, model_dir=str(tmp_path)), metric_fn)
