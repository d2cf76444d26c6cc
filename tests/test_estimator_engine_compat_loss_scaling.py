"""tf.estimator's loss scaling under a strategy (`trainexec.estimator_engine.compat.
loss_scaling`), in a real graph of two replicas (two CPU devices): inside the block a
`tf.compat.v1` optimizer divides a mean loss by the replicas in sync, so the all-reduced
step is one replica's on the whole batch, and the loss is reported as the replicas'
mean; outside it, the gradients add up and the loss is reported as their sum."""

import contextlib

import numpy as np
import pytest
import tensorflow as tf

from trainexec.estimator_engine.compat.loss_scaling import (estimator_loss_scaling,
                                                            reported_loss_reduction)

pytestmark = pytest.mark.tf_line


def one_step(scaled):
    """(w after one step of d(mean(w * x))/dw = 1 per replica at rate 1, the reduction
    reported for the loss) under a MirroredStrategy of two replicas."""
    strategy = tf.distribute.MirroredStrategy(["/device:CPU:0", "/device:CPU:1"])
    with tf.Graph().as_default() as graph:
        with strategy.scope(), (estimator_loss_scaling(strategy) if scaled
                                else contextlib.nullcontext()):
            w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())

            def replica_step():
                loss = tf.compat.v1.losses.compute_weighted_loss(w * tf.ones([4]))
                return tf.compat.v1.train.GradientDescentOptimizer(1.0).minimize(loss)

            step = strategy.group(strategy.extended.call_for_each_replica(replica_step))
            reduction = reported_loss_reduction()
        config = tf.compat.v1.ConfigProto(device_count={"CPU": 2})
        with tf.compat.v1.Session(graph=graph, config=config) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(step)
            return session.run(w), reduction


def test_inside_the_block_the_replicas_step_as_one_and_report_their_mean():
    w, reduction = one_step(scaled=True)
    np.testing.assert_allclose(w, -1.0)  # the mean of the replicas' gradients
    assert reduction == tf.distribute.ReduceOp.MEAN


def test_outside_it_the_gradients_add_up_and_the_loss_is_their_sum():
    w, reduction = one_step(scaled=False)
    np.testing.assert_allclose(w, -2.0)
    assert reduction == tf.distribute.ReduceOp.SUM
