"""trainexec/keras/evaluate/target.py: `KerasTarget` on real checkpoints of a tiny Keras
model written into tmp_path. What `evaluate` runs (the target's steps and callbacks, timed
on its clock) and what it returns; `model_at`; where the training step comes from (a
compiled model's own optimizer, Keras 2's legacy `iter`); and its errors for a weights
file without a step, a file deleted under it and, on Keras 3, TensorFlow-format weights.
Through a SidecarEvaluator (every checkpoint style, damaged and unfinished checkpoints,
the errors' Keras types): tests/test_keras_evaluate_sidecar.py and
tests/test_keras_evaluate_sidecar_contract.py."""

import os

import numpy as np
import pytest
import tensorflow as tf

from fakes import FakeClock, point_state_file_at
from sidecar_programs import toy
from test_keras_evaluate_sidecar import Trainer
from trainexec.errors import ConfigError
from trainexec.evaluation.target import CheckpointDisappearedError
from trainexec.keras.evaluate.target import KerasTarget, MissingIterationsError

pytestmark = [pytest.mark.tf_line, pytest.mark.keras]

keras_3_only = pytest.mark.skipif(not toy.KERAS_3, reason="Keras 2 reads TF-format weights")
keras_2_only = pytest.mark.skipif(toy.KERAS_3, reason="no legacy optimizers in Keras 3")


def target_of(directory, clock=None, **kwargs):
    """A KerasTarget of a fresh toy model (random weights) over `directory`."""
    return KerasTarget(toy.build_model(), toy.dataset(), str(directory), verbose=0,
                       clock=clock or FakeClock(0.0), **kwargs)


def kernel(model):
    return model.layers[-1].get_weights()[0]


class SlowBatches(tf.keras.callbacks.Callback):
    """Each evaluation batch takes `secs` on the fake `clock`."""

    def __init__(self, clock, secs):
        super().__init__()
        self.clock, self.secs, self.batches = clock, secs, 0

    def on_test_batch_end(self, batch, logs=None):
        self.batches += 1
        self.clock.time += self.secs


def test_evaluate_restores_the_checkpoint_and_runs_its_steps_and_callbacks_on_its_clock(
        tmp_path):
    path = Trainer(tmp_path, "h5").save(0.0, iterations=24)  # a model predicting 0
    clock = FakeClock(0.0)
    slow = SlowBatches(clock, 3.0)
    target = target_of(tmp_path, clock, steps=2, callbacks=[slow])
    metrics = target.evaluate(path)
    # Two batches of 64: the first 128 examples, against predictions of 0.
    y = toy.arrays()[1][:128]
    assert set(metrics) == {"loss", "mae", "global_step"}
    assert metrics["loss"] == pytest.approx(float(np.mean(y ** 2)), rel=1e-5)
    assert metrics["mae"] == pytest.approx(float(np.mean(np.abs(y))), rel=1e-5)
    assert metrics["global_step"] == 24 and type(metrics["loss"]) is float
    assert slow.batches == 2 and target.last_duration_secs == 6.0
    assert int(target.model.optimizer.iterations.numpy()) == 24


def test_model_at_gives_the_model_with_each_checkpoints_weights_and_step(tmp_path):
    trainer = Trainer(tmp_path, "manager")
    first = trainer.save(0.25, iterations=8)
    second = trainer.save(0.75, iterations=16)
    target = target_of(tmp_path)
    assert target.latest_checkpoint() == second
    assert target.export_subject is target and target.model_dir == str(tmp_path)
    for path, quality, step in [(first, 0.25, 8), (second, 0.75, 16), (first, 0.25, 8)]:
        model = target.model_at(path)
        assert model is target.model
        np.testing.assert_allclose(kernel(model), toy.TRUE_KERNEL * quality, rtol=1e-6)
        assert int(model.optimizer.iterations.numpy()) == step


def test_a_checkpoint_of_a_compiled_model_alone_gives_the_step_of_its_optimizer(tmp_path):
    model = toy.build_model()
    model.fit(toy.dataset(), epochs=3, verbose=0)  # 4 batches an epoch: 12 steps
    # A custom loop that saves the model only: its optimizer comes with it.
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt-12"))
    target = target_of(tmp_path)
    metrics = target.evaluate(path)
    assert metrics["global_step"] == 12
    np.testing.assert_array_equal(kernel(target.model), kernel(model))
    expected = model.evaluate(toy.dataset(), verbose=0, return_dict=True)["loss"]
    assert metrics["loss"] == pytest.approx(expected, rel=1e-5)


def test_a_weights_file_of_an_uncompiled_model_says_it_has_no_step_and_how_to_save_one(
        tmp_path):
    toy.build_model(compiled=False).save_weights(str(tmp_path / "ckpt-1.weights.h5"))
    target = target_of(tmp_path)
    with pytest.raises(MissingIterationsError) as caught:
        target.evaluate(target.latest_checkpoint())
    assert isinstance(caught.value, RuntimeError) and isinstance(caught.value, ConfigError)
    message = str(caught.value)
    assert message.startswith("Variable `iterations` cannot be loaded from the checkpoint "
                              f"file {tmp_path / 'ckpt-1.weights.h5'}")
    assert "Save it from a compiled model that has trained" in message


def test_a_weights_file_deleted_after_it_was_found_has_disappeared_and_is_not_retried(
        tmp_path):
    trainer = Trainer(tmp_path, "h5")
    trainer.save(0.5)
    clock = FakeClock(0.0)
    target = target_of(tmp_path, clock)
    path = target.latest_checkpoint()
    os.remove(path)  # the trainer rotated it out
    with pytest.raises(CheckpointDisappearedError, match="ckpt-1.weights.h5 is gone"):
        target.evaluate(path)
    assert clock.sleeps == []


@keras_3_only
def test_on_keras_3_a_tensorflow_checkpoint_without_a_model_is_refused_with_the_forms_read(
        tmp_path):
    model = toy.build_model()
    path = tf.train.Checkpoint(net=model, optimizer=model.optimizer).write(
        str(tmp_path / "ckpt-1"))
    with pytest.raises(ValueError, match="Keras 3 cannot load") as caught:
        target_of(tmp_path).evaluate(path)
    assert "'.../ckpt-{epoch}.weights.h5', save_weights_only=True" in str(caught.value)
    assert "tf.train.Checkpoint(model=model, optimizer=optimizer)" in str(caught.value)


@keras_2_only
def test_on_keras_2_tf_format_weights_of_a_legacy_optimizer_give_its_iter_as_the_step(
        tmp_path):
    def legacy_model():
        model = tf.keras.Sequential([tf.keras.layers.Input((toy.FEATURES,)),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.legacy.SGD(0.05), loss="mse")
        return model
    trained = legacy_model()
    trained.fit(toy.dataset(), epochs=3, verbose=0)  # 12 steps, counted in `iter`
    prefix = str(tmp_path / "ckpt-3")
    trained.save_weights(prefix)  # ModelCheckpoint('ckpt-{epoch}', save_weights_only=True)
    point_state_file_at(str(tmp_path), prefix)
    target = KerasTarget(legacy_model(), toy.dataset(), str(tmp_path), verbose=0,
                         clock=FakeClock(0.0))
    assert target.latest_checkpoint() == prefix
    metrics = target.evaluate(prefix)
    assert metrics["global_step"] == 12
    expected = trained.evaluate(toy.dataset(), verbose=0, return_dict=True)["loss"]
    assert metrics["loss"] == pytest.approx(expected, rel=1e-5)


@keras_2_only
def test_on_keras_2_a_checkpoint_whose_model_is_under_another_name_is_refused(tmp_path):
    # TensorFlow's checkpoint guide's layout, the model under `net`: load_weights binds
    # the optimizer at the root but none of the model's layers. Evaluating it would be
    # evaluating untrained weights under the checkpoint's step.
    model = toy.build_model()
    model.fit(toy.dataset(), epochs=1, verbose=0)
    path = tf.train.Checkpoint(step=tf.Variable(1), optimizer=model.optimizer,
                               net=model).write(str(tmp_path / "ckpt-1"))
    with pytest.raises(ConfigError, match="the model's variables are not where") as caught:
        target_of(tmp_path).evaluate(path)
    assert "net, optimizer, step" in str(caught.value)
