"""A small problem for the canned estimators' tests: two numeric features and a
categorical one, labels a function of them; the columns; tf.estimator's variable names
for the models the tests build (read from tf.estimator 2.15's checkpoints)."""

import os

import numpy as np
import tensorflow as tf

ROWS = 64


def data(seed=0, rows=ROWS):
    rng = np.random.RandomState(seed)
    x = rng.rand(rows, 2).astype(np.float32)
    c = (np.arange(rows) % 4).astype(np.int64)
    w = rng.rand(rows).astype(np.float32) + 0.5
    return {"x": x, "c": c, "w": w}


def labels_for(kind, features):
    x = features["x"]
    if kind == "binary":
        return ((x[:, 0] + 0.1 * features["c"]) > 0.6).astype(np.int32)
    if kind == "multi":
        return (np.floor(x[:, 0] * 3)).astype(np.int32)
    return (2.0 * x[:, :1] - x[:, 1:] + 0.3).astype(np.float32)


def input_fn(kind="binary", batch=16, repeat=True, seed=0, labels=None):
    def make():
        features = data(seed)
        y = labels_for(kind, features) if labels is None else labels
        dataset = tf.data.Dataset.from_tensor_slices((features, y)).batch(batch)
        return dataset.repeat() if repeat else dataset
    return make


def columns():
    x = tf.feature_column.numeric_column("x", shape=(2,))
    c = tf.feature_column.categorical_column_with_identity("c", 4)
    return x, c, tf.feature_column.embedding_column(c, 3)


def variables(model_dir):
    return {name: tuple(shape) for name, shape in tf.train.list_variables(model_dir)}


def written(model_dir):
    return os.path.isdir(model_dir) and bool(os.listdir(model_dir))


def adagrad(names):
    return ["training/Adagrad/decay", "training/Adagrad/learning_rate"] + [
        f"training/Adagrad/{name}/accumulator" for name in names]


def ftrl(names, with_iter=False):
    hypers = ["beta", "decay", "l1_regularization_strength", "l2_regularization_strength",
              "learning_rate", "learning_rate_power"] + (["iter"] if with_iter else [])
    return [f"training/Ftrl/{h}" for h in hypers] + [
        f"training/Ftrl/{name}/{slot}" for name in names for slot in ("accumulator",
                                                                      "linear")]


def tf_estimator():
    """tf.estimator's v2 API (the 2.15 line), or the test skips saying why."""
    import pytest

    pytest.importorskip("tensorflow_estimator", reason="needs tf.estimator (the 2.15 "
                        "line's tensorflow-estimator) to compare with")
    return tf.estimator
