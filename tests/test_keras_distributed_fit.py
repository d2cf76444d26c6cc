"""trainexec/keras/distributed_fit.py in this process, on real Keras models: how many steps
a call runs, the check before training, and Keras 3 variables' updates made single ops
for ParameterServerStrategy. The loop itself trains real clusters in
tests/cluster/test_keras_distributed_fit_processes.py and the Keras cluster and fault tests.
"""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from processes import ROOT
from trainexec.cluster import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.keras.distributed_fit import (DEFAULT_STEPS_PER_CALL, DistributedFit,
                                             atomic_updates, steps_per_call)
from trainexec.keras.strategy import MULTI_WORKER_MIRRORED, TRAIN, StrategyPlan

sys.path.insert(0, os.path.join(ROOT, "tests", "keras_programs"))
import keras_toy  # noqa: E402

pytestmark = pytest.mark.keras
MWMS_PLAN = StrategyPlan(MULTI_WORKER_MIRRORED, TRAIN, ClusterConfig.from_dict({}),
                         is_chief=True, own_loop=True)


@pytest.mark.parametrize("compiled, expected", [
    (None, DEFAULT_STEPS_PER_CALL), (1, DEFAULT_STEPS_PER_CALL), (4, 4), (32, 32)])
def test_steps_per_call_follows_the_compiled_steps_per_execution(compiled, expected):
    model = keras_toy.build_dense()
    if compiled is not None:
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=compiled)
    assert steps_per_call(model) == expected


class Unbuilt(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)


def test_a_model_without_weights_is_refused_before_training_naming_the_fix():
    model = Unbuilt()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ConfigError) as raised:
        DistributedFit(model, tf.distribute.get_strategy(), MWMS_PLAN,
                       keras_toy.train_input_fn_global)
    for words in ("Unbuilt", "weights are not created", "MultiWorkerMirroredStrategy",
                  "Input layer", "model(x)"):
        assert words in str(raised.value), str(raised.value)


@pytest.mark.skipif(not keras_toy.KERAS_3, reason="tf_keras variables are tf.Variables, "
                    "whose assign_add is one op already")
def test_keras_3_variable_updates_are_single_ops_inside_atomic_updates_only():
    model = keras_toy.build_dense()
    counter = model.optimizer.iterations
    variable_type = type(counter)

    def ops_of_an_update():
        @tf.function
        def update():
            counter.assign_add(1)
            counter.assign_sub(1)
            counter.assign_add(2)
        return {op.type for op in update.get_concrete_function().graph.get_operations()}

    keras_own = ops_of_an_update()
    assert "AssignVariableOp" in keras_own and "AssignAddVariableOp" not in keras_own
    before = int(counter.numpy())
    with atomic_updates(variable_type):
        ops = ops_of_an_update()
        counter.assign_add(3)  # eagerly too
    assert {"AssignAddVariableOp", "AssignSubVariableOp"} <= ops
    assert "AssignVariableOp" not in ops
    assert int(counter.numpy()) == before + 3
    assert ops_of_an_update() == keras_own  # Keras's own methods are back


def _classes_input_fn():
    x = np.random.default_rng(3).normal(size=(96, keras_toy.FEATURES)).astype("float32")
    y = np.eye(2, dtype="float32")[(x[:, 0] > 0).astype(int)]
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(16)


def test_a_metric_that_is_not_a_scalar_is_logged_as_an_array_as_fit_logs_it():
    """F1Score(average=None) gives one value per class: `fit` logs it as an array; the
    loop must not fail converting it to a float."""
    model = tf.keras.Sequential([tf.keras.layers.Input((keras_toy.FEATURES,)),
                                 tf.keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="categorical_crossentropy",
                  metrics=[tf.keras.metrics.F1Score(average=None, name="f1")])
    seen = []
    batch_logs = tf.keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: seen.append(dict(logs)))
    loop = DistributedFit(model, tf.distribute.get_strategy(), MWMS_PLAN, _classes_input_fn)
    history = loop.fit(steps_per_epoch=4, epochs=2, callbacks=[batch_logs])
    f1 = history.history["f1"]
    assert len(f1) == 2 and all(np.shape(value) == (2,) for value in f1), f1
    assert all(isinstance(value, float) for value in history.history["loss"])
    assert seen and np.shape(seen[-1]["f1"]) == (2,) and isinstance(seen[-1]["loss"], float)
