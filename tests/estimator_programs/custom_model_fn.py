"""A custom model_fn program as a user wrote it for tf.estimator on TensorFlow 2.15.

It trains MODEL_DIR up to MAX_STEPS, then evaluates, predicts with and exports the
checkpoint of step 100, serves that export with tf.saved_model.load, and writes what it
saw to OUT as JSON. tests/cluster/test_estimator_engine_cross_line.py runs it as it is on
TF 2.15, and on the current line with its one import changed to trainexec.estimator.

    python custom_model_fn.py MODEL_DIR MAX_STEPS OUT
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow import estimator

model_dir, max_steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def points(n, seed):
    x = np.random.default_rng(seed).normal(size=(n, 4)).astype("float32")
    return x, (x.sum(axis=1) > 0).astype("int64")


def train_input_fn():
    x, y = points(512, 1)
    return (tf.data.Dataset.from_tensor_slices(({"x": x}, y))
            .shuffle(512, seed=0).repeat().batch(32))


def eval_input_fn():
    x, y = points(300, 2)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(64)


def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": points(10, 3)[0]}).batch(4)


def model_fn(features, labels, mode, params):
    weights = tf.compat.v1.get_variable("h/w", [4, 8])
    bias = tf.compat.v1.get_variable("h/b", [8], initializer=tf.zeros_initializer())
    hidden = tf.nn.relu(tf.matmul(features["x"], weights) + bias)
    logits = tf.matmul(hidden, tf.compat.v1.get_variable("out/w", [8, 2]))
    probabilities = tf.nn.softmax(logits)
    classes = tf.argmax(logits, 1)
    if mode == estimator.ModeKeys.PREDICT:
        predictions = {"class": classes, "probabilities": probabilities}
        return estimator.EstimatorSpec(mode, predictions=predictions, export_outputs={
            "serving_default": estimator.export.PredictOutput(predictions)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, classes),
               "auc": tf.compat.v1.metrics.auc(labels, probabilities[:, 1])}
    if mode == estimator.ModeKeys.EVAL:
        return estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_receiver_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    return estimator.export.ServingInputReceiver({"x": x}, {"x": x})


config = estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=50,
                             keep_checkpoint_max=10, tf_random_seed=3)
model = estimator.Estimator(model_fn, config=config, params={"learning_rate": 0.05})
model.train(train_input_fn, max_steps=max_steps)
checkpoint = os.path.join(model_dir, "model.ckpt-100")
metrics = model.evaluate(eval_input_fn, checkpoint_path=checkpoint)
predictions = list(model.predict(predict_input_fn, checkpoint_path=checkpoint))
export = model.export_saved_model(os.path.join(model_dir, "export"),
                                  serving_input_receiver_fn, checkpoint_path=checkpoint)
served = tf.saved_model.load(export.decode()).signatures["serving_default"](
    x=tf.constant(points(10, 3)[0]))
with open(out, "w") as f:
    json.dump({"tensorflow": tf.__version__, "estimator": estimator.__name__,
               "global_step": int(model.get_variable_value("global_step")),
               "variables": model.get_variable_names(),
               "metrics": {key: float(value) for key, value in metrics.items()},
               "predicted": [p["probabilities"].tolist() for p in predictions],
               "served": served["probabilities"].numpy().tolist()}, f)
