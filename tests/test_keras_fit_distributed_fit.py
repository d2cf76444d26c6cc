"""trainexec/keras/fit/distributed_fit.py in this process, on real Keras models: how many steps
a call runs, the check before training, logs as fit gives them (arrays for metrics with
several values), batch callbacks under ParameterServerStrategy (on a fake RemoteValue),
and Keras 3 variables' updates made single ops for ParameterServerStrategy. The loop itself trains real clusters in
tests/cluster/test_keras_fit_distributed_fit_processes.py and the Keras cluster and fault tests.
"""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from processes import ROOT
from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.keras.fit.distributed_fit import (DEFAULT_STEPS_PER_CALL, DistributedFit,
                                                 _remote_batch_end, atomic_updates,
                                                 steps_per_call)
from trainexec.keras.strategy import MULTI_WORKER_MIRRORED, TRAIN, StrategyPlan

sys.path.insert(0, os.path.join(ROOT, "tests", "keras_programs"))
import keras_toy  # noqa: E402

pytestmark = [pytest.mark.keras, pytest.mark.tf_line]
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


@pytest.mark.skipif(not keras_toy.KERAS_3, reason="tf_keras has no stateless scope")
def test_inside_a_stateless_scope_an_update_keeps_keras_own_even_within_atomic_updates():
    import keras

    counter = keras_toy.build_dense().optimizer.iterations
    before = int(counter.numpy())
    with atomic_updates(type(counter)), keras.StatelessScope() as scope:
        counter.assign_add(5)
        recorded = scope.get_current_value(counter)
    assert int(counter.numpy()) == before  # the variable itself is untouched
    assert recorded is not None and int(recorded) == before + 5


class _RemoteLogs:
    """A ParameterServerStrategy RemoteValue of a call's logs (counts its fetches)."""

    def __init__(self):
        self.fetches = 0

    def fetch(self):
        self.fetches += 1
        return {"loss": np.float32(0.5), "f1": np.array([0.25, 0.75])}


def test_under_ps_batch_callbacks_get_the_remote_logs_or_one_fetch_for_all_that_need_values():
    got = []

    class TakesTfLogs(tf.keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self._supports_tf_logs = True

        def on_train_batch_end(self, batch, logs=None):
            got.append(("tf logs", batch, logs))

    class NeedsValues(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            got.append(("values", batch, logs))

    class EpochsOnly(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            got.append(("epoch", epoch, logs))

    remote = _RemoteLogs()
    callbacks = tf.keras.callbacks.CallbackList([TakesTfLogs(), NeedsValues(), NeedsValues(),
                                                 EpochsOnly()])
    _remote_batch_end(callbacks, 9, remote)
    assert [(kind, batch) for kind, batch, _ in got] == [
        ("tf logs", 9), ("values", 9), ("values", 9)]
    assert got[0][2] is remote and remote.fetches == 1
    assert got[1][2]["loss"] == 0.5 and np.shape(got[2][2]["f1"]) == (2,)

    remote, got[:] = _RemoteLogs(), []
    _remote_batch_end(tf.keras.callbacks.CallbackList([TakesTfLogs(), EpochsOnly()]), 19,
                      remote)
    assert [kind for kind, _, _ in got] == ["tf logs"] and remote.fetches == 0


class _LostIterators:
    """A coordinator whose join fails as a worker's lost iterator makes it fail."""

    def schedule(self, function, args=()):
        return None

    def join(self):
        raise tf.errors.OutOfRangeError(None, None, "End of sequence")


@pytest.mark.parametrize("endless, raised", [
    (True, tf.errors.UnavailableError),   # cannot run out: a peer's loss, retryable
    (False, tf.errors.OutOfRangeError),   # may run out: the error as it is
])
def test_under_ps_an_endless_dataset_that_ends_is_a_lost_peer(endless, raised):
    from types import SimpleNamespace

    from trainexec.contract.exit_codes import PEER_LOST, USER_ERROR, classify

    loop = DistributedFit.__new__(DistributedFit)  # no cluster: only the epoch's end
    loop.model = SimpleNamespace(stop_training=False)
    loop.plan = StrategyPlan(MULTI_WORKER_MIRRORED, TRAIN, ClusterConfig.from_dict({}),
                             is_chief=True, own_loop=True)  # no atomic updates to set up
    loop.steps_per_call, loop._functions = 10, {10: lambda iterator: None}
    loop._iterator, loop._coordinator, loop._endless = object(), _LostIterators(), endless
    with pytest.raises(raised) as error:
        loop._scheduled_epoch(20, tf.keras.callbacks.CallbackList([]))
    assert classify(error.value, True) == (PEER_LOST if endless else USER_ERROR)
