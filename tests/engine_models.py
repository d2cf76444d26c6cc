"""Shared model_fns and inputs for the native Estimator engine's tests
(`trainexec.estimator`): a model with plain variables, which every Keras runs, and the
same model written with `tf.compat.v1.layers` (tf_keras or Keras 2.15 only)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

FEATURES = 4


def data(n: int, seed: int):
    x = np.random.default_rng(seed).normal(size=(n, FEATURES)).astype("float32")
    return x, (x.sum(axis=1) > 0).astype("int64")


def train_input_fn():
    x, y = data(512, 1)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(32)


def eval_input_fn():
    x, y = data(200, 2)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(50)


def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": data(7, 3)[0]}).batch(4)


def make_model_fn(api, layers: bool = False):
    """A 2-class model_fn for `api` (trainexec.estimator or tf.estimator)."""

    def model_fn(features, labels, mode, params):
        x = features["x"]
        if layers:
            hidden = tf.compat.v1.layers.dense(x, 8, activation=tf.nn.relu, name="hidden")
            logits = tf.compat.v1.layers.dense(hidden, 2, name="logits")
        else:
            w = tf.compat.v1.get_variable("hidden/kernel", [FEATURES, 8])
            b = tf.compat.v1.get_variable("hidden/bias", [8],
                                          initializer=tf.compat.v1.zeros_initializer())
            v = tf.compat.v1.get_variable("logits/kernel", [8, 2])
            c = tf.compat.v1.get_variable("logits/bias", [2],
                                          initializer=tf.compat.v1.zeros_initializer())
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, w) + b), v) + c
        classes = tf.argmax(logits, 1)
        predictions = {"class": classes, "probabilities": tf.nn.softmax(logits)}
        if mode == api.ModeKeys.PREDICT:
            return api.EstimatorSpec(mode, predictions=predictions, export_outputs={
                "serving_default": api.export.PredictOutput(predictions)})
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.compat.v1.train.AdamOptimizer(params.get("lr", 0.05)).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return api.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops={
            "accuracy": tf.compat.v1.metrics.accuracy(labels, classes)})

    return model_fn


def serving_input_receiver_fn_for(api):
    def serving_input_receiver_fn():
        x = tf.compat.v1.placeholder(tf.float32, [None, FEATURES], name="x")
        return api.export.ServingInputReceiver({"x": x}, {"x": x})

    return serving_input_receiver_fn
