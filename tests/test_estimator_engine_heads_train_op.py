"""A head's training op: a tf.compat.v1.train optimizer (the global step advances), a
Keras 2 optimizer's get_updates as tf.estimator calls it, a Keras 3 optimizer refused
naming the fix, train_op_fn, update_ops; the refusals in tf.estimator's words."""

import importlib

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te

pytestmark = pytest.mark.tf_line

LOGITS = np.array([[45.0], [-41.0]], np.float32)
LABELS = np.array([[1.0], [1.0]], np.float32)


def _train_spec(**train):
    variable = tf.Variable([[1.0]], name="v")
    logits = tf.matmul(tf.constant(LOGITS), variable)
    spec = te.BinaryClassHead().create_estimator_spec(
        features={}, mode=te.ModeKeys.TRAIN, logits=logits, labels=LABELS, **train)
    return spec, variable


def test_a_v1_optimizer_trains_and_advances_the_global_step():
    with tf.Graph().as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        spec, variable = _train_spec(optimizer=tf.compat.v1.train.GradientDescentOptimizer(
            0.01))
        assert spec.train_op.name.startswith("training/")
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(spec.train_op)
            assert session.run(step) == 1
            assert session.run(variable)[0, 0] != 1.0


def test_a_keras_3_optimizer_is_refused_naming_the_fix():
    keras = importlib.import_module("keras")
    if not keras.__version__.startswith("3."):
        pytest.skip(f"Keras {keras.__version__} here, not Keras 3")
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Keras 3 optimizer.*cannot update variables in "
                           "the Estimator's TensorFlow graph.*tf.compat.v1.train"):
            _train_spec(optimizer=keras.optimizers.SGD(0.1),
                        trainable_variables=[tf.Variable(1.0)])


@pytest.mark.keras
def test_a_keras_2_legacy_optimizer_is_used_through_get_updates():
    try:
        legacy = importlib.import_module("tf_keras").optimizers.legacy
    except ImportError:
        if not importlib.import_module("keras").__version__.startswith("2."):
            pytest.skip("no Keras 2 here")
        legacy = tf.keras.optimizers.legacy
    with tf.Graph().as_default():
        optimizer = legacy.SGD(0.01)
        with pytest.raises(ValueError, match="trainable_variables cannot be None"):
            _train_spec(optimizer=optimizer)
        variable = tf.Variable([[1.0]], name="w")
        logits = tf.matmul(tf.constant(LOGITS), variable)
        spec = te.BinaryClassHead().create_estimator_spec(
            features={}, mode=te.ModeKeys.TRAIN, logits=logits, labels=LABELS,
            optimizer=legacy.SGD(0.01), trainable_variables=[variable])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(spec.train_op)
            assert session.run(variable)[0, 0] != 1.0


@pytest.mark.parametrize("train,words", [
    ({}, "train_op_fn and optimizer cannot both be None.*tf.compat.v1.train"),
    ({"optimizer": tf.compat.v1.train.AdamOptimizer(), "train_op_fn": lambda loss: loss},
     "train_op_fn and optimizer cannot both be set"),
    ({"optimizer": "adam"}, "The given optimizer is not a tf.keras.optimizers.Optimizer "
     "instance.*tf.compat.v1.train"),
    ({"train_op_fn": lambda loss: tf.no_op(), "update_ops": {"a": 1}},
     "update_ops should be a list or a tuple"),
    ({"optimizer": tf.compat.v1.train.AdamOptimizer(), "trainable_variables": {"v": 1}},
     "trainable_variables should be a list or a tuple"),
], ids=["neither", "both", "not-an-optimizer", "update-ops", "trainable-variables"])
def test_refusals(train, words):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=words):
            _train_spec(**train)


def test_update_ops_run_with_the_train_op_and_the_loss_is_summarized():
    with tf.Graph().as_default():
        counter = tf.Variable(0)
        spec, _ = _train_spec(train_op_fn=lambda loss: tf.no_op(),
                              update_ops=[counter.assign_add(1)])
        summaries = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
        assert [s.op.name for s in summaries] == ["loss"]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(spec.train_op)
            assert session.run(counter) == 1
