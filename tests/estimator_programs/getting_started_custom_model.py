"""TensorFlow 1.x's "Getting Started With TensorFlow": its custom model, as users ran it.

The "A custom model" program of that guide (TensorFlow 1.3 and 1.4): a linear model
y = W * x + b written as a model_fn, trained for 1000 steps on four points fed by
`tf.estimator.inputs.numpy_input_fn`, then evaluated on the training points and on
four others, printing both metric dicts. Here as TF 1 code runs on TF 2
(`import tensorflow.compat.v1 as tf`), with the estimator module imported on a line of
its own: tf.estimator's on TensorFlow 2.15 as it is, `trainexec.estimator` elsewhere
with that one line changed (tests/test_estimator_engine_inputs.py).

    python getting_started_custom_model.py
"""

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.compat.v1 import estimator as tf_estimator


def model_fn(features, labels, mode):
    # The model: y = W * x + b for the one real-valued feature x.
    W = tf.get_variable("W", [1], dtype=tf.float64)
    b = tf.get_variable("b", [1], dtype=tf.float64)
    y = W * features["x"] + b
    # What training minimizes: the sum of squared errors of the batch.
    loss = tf.reduce_sum(tf.square(y - labels))
    # A step: one gradient descent update, and the global step counted by hand.
    global_step = tf.train.get_global_step()
    optimizer = tf.train.GradientDescentOptimizer(0.01)
    train = tf.group(optimizer.minimize(loss), tf.assign_add(global_step, 1))
    # The Estimator takes each part from the spec.
    return tf_estimator.EstimatorSpec(mode=mode, predictions=y, loss=loss,
                                      train_op=train)


estimator = tf_estimator.Estimator(model_fn=model_fn)
# Four training points on y = 1 - x, four evaluation points near it.
x_train = np.array([1., 2., 3., 4.])
y_train = np.array([0., -1., -2., -3.])
x_eval = np.array([2., 5., 8., 1.])
y_eval = np.array([-1.01, -4.1, -7., 0.])
input_fn = tf_estimator.inputs.numpy_input_fn(
    {"x": x_train}, y_train, batch_size=4, num_epochs=None, shuffle=True)
train_input_fn = tf_estimator.inputs.numpy_input_fn(
    {"x": x_train}, y_train, batch_size=4, num_epochs=1000, shuffle=False)
eval_input_fn = tf_estimator.inputs.numpy_input_fn(
    {"x": x_eval}, y_eval, batch_size=4, num_epochs=1000, shuffle=False)

# 1000 training steps on the shuffled, endless training input.
estimator.train(input_fn=input_fn, steps=1000)

# How well it fits the training points, and the evaluation points.
train_metrics = estimator.evaluate(input_fn=train_input_fn)
eval_metrics = estimator.evaluate(input_fn=eval_input_fn)
print("train metrics: %r" % train_metrics)
print("eval metrics: %r" % eval_metrics)
