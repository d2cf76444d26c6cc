"""trainexec.SidecarEvaluator keeps tf.keras.utils.SidecarEvaluator's public contract: its
attributes, its end-of-evaluation log line, the errors `start()` raises (and their types),
and the hint while no checkpoint arrives. Real Keras models and checkpoints; a fake clock
for the waits. Runs on Keras 3 and again under tf_keras (the `keras` marker)."""

import logging

import numpy as np
import pytest
import tensorflow as tf

from fakes import FakeClock
from sidecar_programs import toy
from sidecars import sidecar
from test_keras_evaluate_sidecar import Schedule, Trainer
from trainexec.errors import ConfigError
from trainexec.keras.evaluate.sidecar import SidecarEvaluator
from trainexec.keras.evaluate.target import (MissingIterationsError, ModelNotCompiledError,
                                             NothingToLoadError)

pytestmark = [pytest.mark.keras, pytest.mark.tf_line]

SIDECAR_LOGGERS = "trainexec"


def finished_run(directory, style="h5", quality=0.5, iterations=24):
    trainer = Trainer(directory, style)
    trainer.save(quality, iterations=iterations)
    trainer.finish()
    return trainer


# -- attributes --------------------------------------------------------------------------

def test_keras_attributes_are_the_arguments(tmp_path):
    model, data = toy.build_model(), toy.dataset()
    board = tf.keras.callbacks.TensorBoard(str(tmp_path / "logs"))
    evaluator = SidecarEvaluator(model, data, str(tmp_path), steps=2, max_evaluations=5,
                                 callbacks=[board], clock=FakeClock(0.0))
    assert evaluator.model is model and evaluator.data is data
    assert (evaluator.steps, evaluator.max_evaluations) == (2, 5)
    assert evaluator.callbacks == [board] and evaluator.checkpoint_dir == str(tmp_path)
    assert SidecarEvaluator(model, data, str(tmp_path)).callbacks == []


@pytest.mark.parametrize("style", ["manager", "h5"])
def test_model_after_start_holds_the_evaluated_checkpoint(tmp_path, style):
    trainer = finished_run(tmp_path, style, quality=0.75, iterations=40)
    evaluator = sidecar(tmp_path)
    evaluator.start()
    for restored, trained in zip(evaluator.model.weights, trainer.model.weights):
        np.testing.assert_array_equal(restored.numpy(), trained.numpy())
    assert int(evaluator.model.optimizer.iterations.numpy()) == 40


class CountsTestEnds(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.ends = 0

    def on_test_end(self, logs=None):
        self.ends += 1


def test_attributes_set_before_start_are_what_it_evaluates_with(tmp_path):
    finished_run(tmp_path)
    evaluator = sidecar(tmp_path)
    counter = CountsTestEnds()
    evaluator.callbacks = [counter]
    evaluator.data = toy.dataset(n=64, batch=64, seed=7)
    evaluator.steps = 1
    metrics = evaluator.start()
    assert counter.ends == 1
    expected = evaluator.model.evaluate(toy.dataset(n=64, batch=64, seed=7), verbose=0,
                                        return_dict=True)
    assert metrics["loss"] == pytest.approx(expected["loss"], rel=1e-5)


# -- the end-of-evaluation line ----------------------------------------------------------

def test_each_evaluation_logs_keras_end_of_evaluation_line(tmp_path, caplog):
    trainer = Trainer(tmp_path)
    clock = FakeClock(0.0)
    trainer.save(0.5)
    clock.on_sleep = Schedule((2, lambda: trainer.save(0.75)))
    caplog.set_level(logging.INFO, logger=SIDECAR_LOGGERS)
    sidecar(tmp_path, clock, max_evaluations=2).start()
    ends = [r.getMessage() for r in caplog.records
            if r.getMessage().startswith("End of evaluation. Metrics: ")]
    ours = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Evaluated ")]
    assert len(ends) == 2 and len(ours) == 2
    for line in ends:
        fields = dict(item.split("=") for item in line.split(": ", 1)[1].split(" "))
        assert set(fields) == {"loss", "mae"}  # the model's metrics, as Keras logs them
        assert all(float(value) >= 0 for value in fields.values())


# -- errors: raised by start(), of Keras's types -----------------------------------------

def test_checkpoint_without_iterations_fails_in_start_as_a_runtime_error(tmp_path):
    uncompiled = toy.build_model(compiled=False)  # as in Keras's own test: no optimizer
    tf.train.CheckpointManager(tf.train.Checkpoint(model=uncompiled), str(tmp_path), 1).save()
    evaluator = SidecarEvaluator(uncompiled, None, str(tmp_path), clock=FakeClock(0.0))
    with pytest.raises(RuntimeError) as caught:
        evaluator.start()
    assert isinstance(caught.value, MissingIterationsError)
    assert isinstance(caught.value, ConfigError)
    message = str(caught.value)
    assert "`iterations` cannot be loaded from the checkpoint file" in message
    assert "tf.train.Checkpoint(model=model, optimizer=optimizer)" in message  # the fix


def test_checkpoint_of_an_unbuilt_model_has_nothing_to_load(tmp_path):
    unbuilt = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    tf.train.CheckpointManager(tf.train.Checkpoint(model=unbuilt), str(tmp_path), 1).save()
    evaluator = SidecarEvaluator(tf.keras.Sequential([tf.keras.layers.Dense(1)]), None,
                                 str(tmp_path), clock=FakeClock(0.0))
    with pytest.raises(AssertionError) as caught:
        evaluator.start()
    assert isinstance(caught.value, NothingToLoadError)
    assert isinstance(caught.value, ConfigError)
    assert str(caught.value).startswith("Nothing to load.")
    assert "model.build(input_shape)" in str(caught.value)


def test_unbuilt_evaluation_model_and_a_weights_file_has_nothing_to_load(tmp_path):
    finished_run(tmp_path, "h5")
    unbuilt = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    unbuilt.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    with pytest.raises(AssertionError, match="Nothing to load into `model`: it has no "
                                             "variables yet.*model.build"):
        SidecarEvaluator(unbuilt, toy.dataset(), str(tmp_path), clock=FakeClock(0.0),
                         verbose=0).start()


@pytest.mark.parametrize("style", ["manager", "h5"])
def test_uncompiled_model_fails_in_start_not_in_the_constructor(tmp_path, style):
    finished_run(tmp_path, style)
    evaluator = SidecarEvaluator(toy.build_model(compiled=False), toy.dataset(),
                                 str(tmp_path), clock=FakeClock(0.0))  # no error yet
    with pytest.raises(RuntimeError, match=r"You must compile your model before "
                                           r"evaluating it.*model.compile\(") as caught:
        evaluator.start()
    assert isinstance(caught.value, ModelNotCompiledError)
    assert isinstance(caught.value, ConfigError)


# -- the hint while no checkpoint arrives ------------------------------------------------

class ClockedRecords(logging.Handler):
    """Log messages with the fake clock's time when they were logged."""

    def __init__(self, clock):
        super().__init__(logging.INFO)
        self.clock = clock
        self.lines = []

    def emit(self, record):
        self.lines.append((self.clock.now(), record.getMessage()))


@pytest.fixture
def clocked():
    clock = FakeClock(0.0)
    handler = ClockedRecords(clock)
    log = logging.getLogger(SIDECAR_LOGGERS)
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    yield clock, handler
    log.removeHandler(handler)
    log.setLevel(level)


def hints(handler):
    return [(at, line) for at, line in handler.lines
            if line.startswith("No checkpoints appear to be found")]


def test_no_checkpoint_after_30_seconds_logs_once_where_and_what_it_reads(tmp_path,
                                                                       clocked):
    clock, handler = clocked
    sidecar(tmp_path, clock, idle_timeout_secs=120).start()
    [(at, line)] = hints(handler)
    assert 30 <= at < 31  # on the fake clock: the test does not sleep
    assert line.startswith(f"No checkpoints appear to be found after 30 seconds in "
                           f"{tmp_path}.")
    for form in ("tf.train.Checkpoint(model=model, optimizer=optimizer)",
                 "'ckpt-{epoch}.weights.h5' with save_weights_only=True",
                 "'ckpt-{epoch}.keras'", "TensorFlow-format weights"):
        assert form in line


def test_hint_wait_is_an_option_and_none_turns_it_off(tmp_path, clocked):
    clock, handler = clocked
    sidecar(tmp_path, clock, idle_timeout_secs=20, first_checkpoint_hint_secs=5).start()
    [(at, _)] = hints(handler)
    assert 5 <= at < 6
    handler.lines.clear()
    sidecar(tmp_path / "other", clock, idle_timeout_secs=60,
            first_checkpoint_hint_secs=None).start()
    assert hints(handler) == []


def test_no_hint_once_a_checkpoint_has_arrived(tmp_path, clocked):
    clock, handler = clocked
    trainer = Trainer(tmp_path)
    clock.on_sleep = lambda c: c.now() >= 10 and trainer.number == 0 and trainer.save(0.5)
    metrics = sidecar(tmp_path, clock, max_evaluations=1).start()
    assert metrics["global_step"] == 8 and clock.now() < 30
    trainer2 = Trainer(tmp_path / "later")
    clock2 = FakeClock(0.0)
    handler.clock = clock2
    clock2.on_sleep = lambda c: c.now() >= 29 and trainer2.number == 0 and trainer2.save(0.5)
    sidecar(tmp_path / "later", clock2, idle_timeout_secs=60).start()
    assert hints(handler) == []


def test_checkpoint_after_fit_restores_though_its_variables_are_keyed_by_the_optimizer(
        tmp_path):
    # After fit, a Keras 3 optimizer tracks the model's variables and the checkpoint keys
    # them under `optimizer/...`: they are still the model's, nothing is missing.
    model = toy.build_model()
    model.fit(toy.dataset(), epochs=1, verbose=0)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model, optimizer=model.optimizer),
                               str(tmp_path), 1).save()
    evaluator = sidecar(tmp_path, max_evaluations=1)
    metrics = evaluator.start()
    for restored, trained in zip(evaluator.model.weights, model.weights):
        np.testing.assert_array_equal(restored.numpy(), trained.numpy())
    assert metrics["global_step"] == int(model.optimizer.iterations.numpy())
