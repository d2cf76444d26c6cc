"""Fault matrix of the evaluator (issue 9): one row per fault, each asserting what a
user sees, how soon it is reported, and that nothing was lost.

Estimator rows run a real tf.estimator evaluator task (TrainingExecutor with an
evaluator TF_CONFIG) on checkpoints of one real training run (TF 2.15 line); Keras
rows run SidecarEvaluator on real Keras checkpoints of tests/sidecar_programs/toy.py.
Time is a FakeClock: "reported within" counts fake seconds from the fault to the
first warning or error naming the file (or to the error raised).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import logging
import os
import shutil
from typing import Callable

import pytest
import tensorflow as tf

import trainexec
from fakes import (AttemptGuard, ClockedLog, FakeClock, RecordingExporter,
                   point_state_file_at, write_checkpoint)
from sidecar_programs import toy
from trainexec.records.completion import clear_training_complete, record_training_complete
from trainexec.evaluation.target import CheckpointDisappearedError, CorruptCheckpointError
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.keras.evaluate.target import KerasTarget
from trainexec.estimator_trainer.target import EstimatorTarget
from trainexec.keras.evaluate.sidecar import SidecarEvaluator

pytestmark = pytest.mark.tf_line

POLL = 1.0
MISSING_DATA = "/no/such/dir/eval-data.tfrecord"  # the user's typo


# -- what a user sees ------------------------------------------------------------------

@dataclasses.dataclass
class Outcome:
    metrics: dict | None  # what the evaluator returned (None: nothing evaluated)
    exports: list  # (global_step, is_the_final_export) of each export call
    raised: BaseException | None
    lines: list  # (fake time, level, message) of trainexec's log lines
    fault_at: float  # fake time the fault happened
    ended_at: float
    attempts: int = 0  # evaluations started (a guard stops a busy loop at 6)

    def reported_at(self, name: str) -> float | None:
        """When the user first heard of `name`: a warning or error naming it, or
        the error raised."""
        for at, level, message in self.lines:
            if level >= logging.WARNING and name in message:
                return at
        if self.raised is not None and name in str(self.raised):
            return self.ended_at
        return None

    def errors(self) -> list[str]:
        return [m for _, level, m in self.lines if level >= logging.ERROR]


@dataclasses.dataclass(frozen=True)
class Row:
    fault: str
    scenario: Callable  # (tmp_path, request) -> Outcome
    names: str  # the file (or checkpoint) the report must name
    reported_within: float  # fake seconds from the fault
    final_step: int | None  # global_step of the metrics the evaluator returns
    final_exports: tuple = ()  # steps of final exports: exactly these, once each
    raises: type | None = None
    error_logs: int = 0  # ERROR lines (the skip of a corrupt checkpoint is one)
    ends_within: float | None = None  # fake seconds from the fault to the end


def watched(clock, exporter, guard, fault_at, run):
    """Runs `run()` (an evaluator), returning what a user would see."""
    metrics, raised = None, None
    with ClockedLog(clock) as log:
        try:
            metrics = run()
        except Exception as err:  # the outcome a user sees: asserted by the row
            raised = err
    return Outcome(metrics=metrics, raised=raised, lines=log.lines,
                   exports=[(c["step"], c["final"]) for c in exporter.calls],
                   fault_at=fault_at, ended_at=clock.now(), attempts=guard.attempts)


def hang_guard(clock, *actions, limit=5000.0):
    def on_sleep(c):
        for action in actions:
            action(c)
        assert c.now() < limit, "the evaluator waited on forever"
    clock.on_sleep = on_sleep


def at(when, action):
    """An action run once, on the first sleep at or after fake time `when`."""
    done = []

    def run(c):
        if not done and c.now() >= when:
            done.append(True)
            action()
    return run


def truncate(path, size=10):
    with open(path, "r+b") as f:
        f.truncate(size)


# -- Estimator rows: a real tf.estimator evaluator task ----------------------------------

EVALUATOR_TF_CONFIG = json.dumps({"cluster": {"chief": ["127.0.0.1:2222"]},
                                  "task": {"type": "evaluator", "index": 0}})
MAX_STEPS = 40


def train_input_fn():
    from trainexec.examples import estimator_job
    x, y = estimator_job.make_data(640, seed=1)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(32)


def eval_input_fn():
    from trainexec.examples import estimator_job
    x, y = estimator_job.make_data(200, seed=2)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(100)


def typo_input_fn():
    def parse(_):
        return {"x": tf.zeros([4])}, tf.constant(0, tf.int64)
    return tf.data.TFRecordDataset(MISSING_DATA).map(parse).batch(10)


@pytest.fixture(scope="module")
def estimator_run(tmp_path_factory):
    """One finished training run: checkpoints at steps 0, 20 and 40 (max_steps)."""
    from trainexec.examples import estimator_job
    model_dir = str(tmp_path_factory.mktemp("estimator_run"))
    saved = os.environ.pop("TF_CONFIG", None)
    try:
        estimator = estimator_job.make_estimator(model_dir, 20, tf_random_seed=1)
        estimator.train(train_input_fn, max_steps=MAX_STEPS)
    finally:
        if saved is not None:
            os.environ["TF_CONFIG"] = saved
    return model_dir


def copy_run(request, tmp_path, latest_step):
    """A copy of the training run whose state file names `latest_step`."""
    model_dir = str(tmp_path / "model")
    shutil.copytree(request.getfixturevalue("estimator_run"), model_dir)
    point_state_file_at(model_dir, ckpt(model_dir, latest_step))
    return model_dir


def ckpt(model_dir, step):
    return os.path.join(model_dir, f"model.ckpt-{step}")


def finish(model_dir, step=MAX_STEPS):
    """The chief names its last checkpoint and records that training is over."""
    point_state_file_at(model_dir, ckpt(model_dir, step))
    record_training_complete(model_dir, ckpt(model_dir, step), step, MAX_STEPS)


def estimator_evaluator(model_dir, clock, fault_at, input_fn=eval_input_fn):
    """Runs the evaluator task of `model_dir` to its end."""
    from trainexec.examples import estimator_job
    exporter, guard = RecordingExporter(), AttemptGuard(6)
    eval_spec = trainexec.EvalSpec(input_fn, steps=None, exporters=[exporter],
                                   start_delay_secs=0, throttle_secs=0)
    train_spec = trainexec.TrainSpec(train_input_fn, max_steps=MAX_STEPS)
    saved = os.environ.get("TF_CONFIG")
    os.environ["TF_CONFIG"] = EVALUATOR_TF_CONFIG
    try:
        executor = trainexec.TrainingExecutor(
            estimator_job.make_estimator(model_dir, 20), train_spec, eval_spec,
            continuous_eval_listener=guard, clock=clock, poll_secs=POLL)
    finally:
        if saved is None:
            del os.environ["TF_CONFIG"]
        else:
            os.environ["TF_CONFIG"] = saved

    def run():
        result = executor.run()  # None: no checkpoint was evaluated
        return result.metrics if result is not None else None
    return watched(clock, exporter, guard, fault_at, run)


def _finished_run_with_a_truncated_last_checkpoint(tmp_path, request, suffix):
    model_dir = copy_run(request, tmp_path, 40)
    finish(model_dir)
    truncate(ckpt(model_dir, 40) + suffix)
    clock = FakeClock(0.0)
    hang_guard(clock)
    return estimator_evaluator(model_dir, clock, fault_at=0.0)


def estimator_final_index_truncated(tmp_path, request):
    # A finished run (its completion record is already there) whose last
    # checkpoint's index was cut short: it never becomes readable.
    return _finished_run_with_a_truncated_last_checkpoint(tmp_path, request, ".index")


def estimator_final_data_truncated(tmp_path, request):
    # The same with the data shard cut short: the index reads, restoring does not.
    return _finished_run_with_a_truncated_last_checkpoint(tmp_path, request,
                                                          ".data-00000-of-00001")


def estimator_middle_data_truncated(tmp_path, request):
    # ckpt-20's data shard is damaged; training goes on and ends with ckpt-40.
    model_dir = copy_run(request, tmp_path, 20)
    truncate(ckpt(model_dir, 20) + ".data-00000-of-00001")
    clock = FakeClock(0.0)
    hang_guard(clock, at(5, lambda: finish(model_dir)))
    return estimator_evaluator(model_dir, clock, fault_at=0.0)


def estimator_rotated_out(tmp_path, request):
    # The chief saves ckpt-40 and its keep_checkpoint_max deletes ckpt-20 while
    # the evaluator builds its graph for ckpt-20 (the input_fn runs before restore).
    model_dir = copy_run(request, tmp_path, 20)
    rotated = []

    def input_fn():
        if not rotated:
            rotated.append(True)
            for name in glob.glob(ckpt(model_dir, 20) + ".*"):
                os.remove(name)
            finish(model_dir)
        return eval_input_fn()
    clock = FakeClock(0.0)
    hang_guard(clock)
    return estimator_evaluator(model_dir, clock, fault_at=0.0, input_fn=input_fn)


def estimator_eval_input_typo(tmp_path, request):
    model_dir = copy_run(request, tmp_path, 20)
    clock = FakeClock(0.0)
    hang_guard(clock)
    return estimator_evaluator(model_dir, clock, fault_at=0.0, input_fn=typo_input_fn)


def estimator_stale_record_chief_clock_ahead(tmp_path, request):
    # An earlier run in this model_dir ended at ckpt-20; its chief's clock was an
    # hour ahead, so by `finished_at` its record looks newer than this evaluator.
    # A new run's chief clears it at t=3 and ends with ckpt-40 at t=10.
    import time
    model_dir = copy_run(request, tmp_path, 20)
    record_training_complete(model_dir, ckpt(model_dir, 20), 20, None,
                             wall_time=time.time() + 3600)
    an_hour_ago = time.time() - 3600
    os.utime(os.path.join(model_dir, "trainexec", "training_complete.json"),
             (an_hour_ago, an_hour_ago))
    clock = FakeClock(0.0)
    hang_guard(clock, at(3, lambda: clear_training_complete(model_dir)),
               at(10, lambda: finish(model_dir)))
    return estimator_evaluator(model_dir, clock, fault_at=0.0)


# -- Keras rows: SidecarEvaluator on real Keras checkpoints --------------------------

STEPS_PER_EPOCH = 8


class KerasTrainer:
    """Saves `ckpt-N.weights.h5` files (or, with `max_to_keep`, CheckpointManager
    checkpoints that rotate) of the toy model."""

    def __init__(self, directory, max_to_keep=None):
        self.directory = str(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.model = toy.build_model()
        self.model.evaluate(toy.dataset(), verbose=0)  # builds the metrics (Keras 2)
        self.number = 0
        self.manager = None if max_to_keep is None else tf.train.CheckpointManager(
            tf.train.Checkpoint(model=self.model, optimizer=self.model.optimizer),
            self.directory, max_to_keep=max_to_keep)

    def save(self, quality=0.5):
        self.number += 1
        toy.set_quality(self.model, quality)
        self.model.optimizer.iterations.assign(self.number * STEPS_PER_EPOCH)
        if self.manager is not None:
            return self.manager.save()
        path = os.path.join(self.directory, f"ckpt-{self.number}.weights.h5")
        self.model.save_weights(path)
        return path

    def finish(self, path):
        record_training_complete(self.directory, path, self.number * STEPS_PER_EPOCH, None)


def keras_evaluator(directory, clock, fault_at, data=None, listeners=(), **kwargs):
    exporter, guard = RecordingExporter(), AttemptGuard(6)
    evaluator = SidecarEvaluator(toy.build_model(), data or toy.dataset(), str(directory),
                                 clock=clock, verbose=0, exporters=[exporter],
                                 listeners=[guard, *listeners], poll_secs=POLL, **kwargs)
    return watched(clock, exporter, guard, fault_at, evaluator.start)


def keras_final_file_truncated(tmp_path, request):
    trainer = KerasTrainer(tmp_path)
    trainer.save()

    def last_one_cut_short():
        path = trainer.save(0.9)
        truncate(path)
        trainer.finish(path)
    clock = FakeClock(0.0)
    hang_guard(clock, at(5, last_one_cut_short))
    return keras_evaluator(tmp_path, clock, fault_at=5.0)


def keras_rotated_out(tmp_path, request):
    # CheckpointManager(max_to_keep=1) saves ckpt-2, deleting ckpt-1, just as the
    # evaluator starts on ckpt-1.
    trainer = KerasTrainer(tmp_path, max_to_keep=1)
    trainer.save()

    class RotateOnFirstEvaluation(ContinuousEvalListener):
        def before_eval(self):
            if trainer.number == 1:
                trainer.finish(trainer.save(0.9))
            return True
    clock = FakeClock(0.0)
    hang_guard(clock)
    return keras_evaluator(tmp_path, clock, fault_at=0.0,
                           listeners=[RotateOnFirstEvaluation()])


def keras_eval_data_typo(tmp_path, request):
    trainer = KerasTrainer(tmp_path)
    trainer.finish(trainer.save())
    data = tf.data.TFRecordDataset(MISSING_DATA).map(
        lambda _: (tf.zeros([toy.FEATURES]), tf.zeros([1]))).batch(8)
    clock = FakeClock(0.0)
    hang_guard(clock)
    return keras_evaluator(tmp_path, clock, fault_at=0.0, data=data)


def keras_writer_stuck(tmp_path, request):
    # ckpt-2 appears half-written at t=5 and its writer keeps touching it (alive
    # but stuck), so it is never given up as unreadable: the idle timeout ends it.
    trainer = KerasTrainer(tmp_path)
    trainer.save()
    path = os.path.join(str(tmp_path), "ckpt-2.weights.h5")

    def half_written():
        whole = open(trainer.save(0.9), "rb").read()
        with open(path, "wb") as f:
            f.write(whole[:len(whole) // 2])

    def touch(c):
        if os.path.exists(path):
            ns = int(c.now() * 1e9) + 1
            os.utime(path, ns=(ns, ns))
    clock = FakeClock(0.0)
    hang_guard(clock, at(5, half_written), touch)
    outcome = keras_evaluator(tmp_path, clock, fault_at=5.0, idle_timeout_secs=IDLE)
    waits = [t for t, _, m in outcome.lines if m.startswith("Evaluator waiting")]
    gaps = [b - a for a, b in zip(waits, waits[1:])]
    assert waits and max(gaps) <= 60 + POLL, gaps  # never silent for over a minute
    assert outcome.ended_at - waits[-1] <= 60 + POLL
    return outcome


IDLE = 300
UNREADABLE = 60  # LoopPolicy.unreadable_timeout_secs, the documented bound
GRACE = 30  # LoopPolicy.stale_record_grace_secs

estimator = pytest.mark.estimator
keras = pytest.mark.keras
ROWS = [
    pytest.param(Row(
        "final .index truncated, run finished: skipped after the unreadable wait, stop",
        estimator_final_index_truncated, names="model.ckpt-40",
        reported_within=UNREADABLE + POLL, ends_within=UNREADABLE + POLL,
        final_step=None, error_logs=1), marks=estimator, id="estimator-final-index"),
    pytest.param(Row(
        "final .data truncated, run finished: retried once, skipped, stop",
        estimator_final_data_truncated, names="model.ckpt-40",
        # ckpt-40 is at max_steps: it is the last once the record is trusted.
        reported_within=GRACE + POLL, ends_within=GRACE + POLL, final_step=None,
        error_logs=1), marks=estimator, id="estimator-final-data"),
    pytest.param(Row(
        "a middle checkpoint's .data truncated: skipped, the last one evaluated",
        estimator_middle_data_truncated, names="model.ckpt-20", reported_within=0,
        final_step=40, final_exports=(40,), error_logs=1),
        marks=estimator, id="estimator-middle-data"),
    pytest.param(Row(
        "checkpoint rotated out (ValueError: not a valid checkpoint): a newer one",
        estimator_rotated_out, names="model.ckpt-20", reported_within=0, final_step=40,
        final_exports=(40,)), marks=estimator, id="estimator-rotated"),
    pytest.param(Row(
        "eval input path typo (NotFoundError): the real error, at once",
        estimator_eval_input_typo, names=MISSING_DATA, reported_within=0,
        ends_within=0, final_step=None, raises=tf.errors.NotFoundError, error_logs=1),
        marks=estimator, id="estimator-input-typo"),
    pytest.param(Row(
        "earlier run's record, its chief's clock an hour ahead: not trusted at once",
        estimator_stale_record_chief_clock_ahead, names="", reported_within=0,
        final_step=40, final_exports=(40,)), marks=estimator, id="estimator-stale-record"),
    pytest.param(Row(
        "final .weights.h5 truncated: skipped after the unreadable wait, stop",
        keras_final_file_truncated, names="ckpt-2.weights.h5",
        reported_within=UNREADABLE + POLL, ends_within=UNREADABLE + POLL,
        final_step=STEPS_PER_EPOCH, error_logs=1), marks=keras, id="keras-final-file"),
    pytest.param(Row(
        "checkpoint rotated out by CheckpointManager(max_to_keep=1): a newer one",
        keras_rotated_out, names="ckpt-1", reported_within=0,
        final_step=2 * STEPS_PER_EPOCH, final_exports=(2 * STEPS_PER_EPOCH,)),
        marks=keras, id="keras-rotated"),
    pytest.param(Row(
        "eval data path typo (NotFoundError): the real error, at once",
        keras_eval_data_typo, names=MISSING_DATA, reported_within=0, ends_within=0,
        final_step=None, raises=tf.errors.NotFoundError, error_logs=1),
        marks=keras, id="keras-data-typo"),
    pytest.param(Row(
        "writer stuck mid-file: logged every minute, ended by the idle timeout",
        keras_writer_stuck, names="ckpt-2.weights.h5", reported_within=IDLE + POLL,
        ends_within=IDLE + POLL, final_step=STEPS_PER_EPOCH), marks=keras,
        id="keras-writer-stuck"),
]


@pytest.mark.parametrize("row", ROWS)
def test_fault(row, tmp_path, request):
    outcome = row.scenario(tmp_path, request)
    if row.raises is None:
        assert outcome.raised is None, f"{row.fault}: raised {outcome.raised!r}"
    else:
        assert isinstance(outcome.raised, row.raises), outcome.raised
        assert outcome.attempts == 1  # at once: not after retries, not a busy loop
    # How soon the user hears of it, naming the file.
    if row.names:
        reported = outcome.reported_at(row.names)
        assert reported is not None, f"nothing named {row.names}: {outcome.lines[-5:]}"
        assert reported - outcome.fault_at <= row.reported_within
    if row.ends_within is not None:
        assert outcome.ended_at - outcome.fault_at <= row.ends_within
    assert len(outcome.errors()) == row.error_logs, outcome.errors()
    # Nothing lost: the last good metrics, and exactly the final export owed.
    step = None if outcome.metrics is None else int(outcome.metrics["global_step"])
    assert step == row.final_step
    assert [s for s, final in outcome.exports if final] == list(row.final_exports)
    assert len({s for s, _ in outcome.exports}) == len(outcome.exports)  # none twice


# -- the targets' verdicts, which the rows above rest on --------------------------------

class FailingEstimator:
    """An Estimator whose evaluate raises `error` (what tf.estimator raised in the
    rows above), over a real checkpoint."""

    def __init__(self, model_dir, error):
        self.model_dir, self.error, self.calls = model_dir, error, 0

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        self.calls += 1
        raise self.error


def delete_files(prefix):
    for name in glob.glob(prefix + ".*"):
        os.remove(name)


def cut_data_short(prefix):
    truncate(prefix + ".data-00000-of-00001", 4)


def leave_intact(prefix):
    del prefix


NOT_VALID = ValueError("The passed save_path is not a valid checkpoint: model.ckpt-10")
OUT_OF_RANGE = tf.errors.OutOfRangeError(None, None, "Graph execution error:\n\n"
                                         "Read less bytes than requested")
TYPO = tf.errors.NotFoundError(None, None, f"{MISSING_DATA}; No such file or directory")
ESTIMATOR_VERDICTS = [
    ("rotated out (files gone), ValueError", delete_files, NOT_VALID,
     CheckpointDisappearedError, 1),
    ("rotated out (files gone), NotFoundError", delete_files, TYPO,
     CheckpointDisappearedError, 1),
    ("data shard cut short: retried once, then corrupt", cut_data_short, OUT_OF_RANGE,
     CorruptCheckpointError, 2),
    ("NotFoundError, files all there: the user's, raised as it is", leave_intact, TYPO,
     tf.errors.NotFoundError, 1),
    ("OutOfRangeError, checkpoint reads in full: raised as it is", leave_intact,
     OUT_OF_RANGE, tf.errors.OutOfRangeError, 1),
    ("ValueError, files all there: raised as it is", leave_intact, NOT_VALID, ValueError, 1),
]


@pytest.mark.parametrize("damage,error,verdict,calls",
                         [row[1:] for row in ESTIMATOR_VERDICTS],
                         ids=[row[0] for row in ESTIMATOR_VERDICTS])
def test_estimator_target_verdicts(tmp_path, damage, error, verdict, calls):
    prefix = write_checkpoint(str(tmp_path), 10)
    damage(prefix)
    estimator, clock = FailingEstimator(str(tmp_path), error), FakeClock(0.0)
    spec = trainexec.EvalSpec(eval_input_fn, steps=None)
    target = EstimatorTarget(estimator, spec, clock=clock, retry_secs=2.0)
    with pytest.raises(verdict) as info:
        target.evaluate(prefix)
    assert estimator.calls == calls and clock.sleeps == [2.0] * (calls - 1)
    if verdict in (CheckpointDisappearedError, CorruptCheckpointError):
        assert info.value.__cause__ is error
        assert "model.ckpt-10" in str(info.value) or "bytes" in str(info.value)
    else:
        assert info.value is error


@pytest.mark.keras
def test_keras_target_calls_a_checkpoint_rotated_away_disappeared(tmp_path):
    trainer = KerasTrainer(tmp_path, max_to_keep=1)
    first = trainer.save()
    trainer.save()  # CheckpointManager(max_to_keep=1) deletes `first`
    assert not glob.glob(first + ".*")
    clock = FakeClock(0.0)
    target = KerasTarget(toy.build_model(), toy.dataset(), str(tmp_path), verbose=0,
                         clock=clock)
    with pytest.raises(CheckpointDisappearedError, match="ckpt-1"):
        target.evaluate(first)
    assert clock.sleeps == []  # not retried as if it were damaged
