"""SidecarEvaluator on real Keras checkpoints (both styles) written in this process, with a
fake clock. Live against a training child process, on the real clock, it is
tests/cluster/test_sidecar_processes.py."""

import glob
import json
import logging
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from fakes import FakeClock, RecordingExporter, point_state_file_at
from sidecar_programs import toy
from sidecars import STEPS_PER_EPOCH, metrics_log, names, sidecar
from trainexec.records.checkpoints import latest_keras_checkpoint
from trainexec.records.completion import read_training_complete, record_training_complete
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.errors import ConfigError
from trainexec.keras.evaluate.exporters import BEST_FILE, BestExporter, FinalExporter
from trainexec.keras.evaluate.target import flatten_metrics
from trainexec.keras.fit.callbacks import TrainingCompleteCallback
from trainexec.keras.evaluate.sidecar import STATE_FILE, SidecarEvaluator


pytestmark = [pytest.mark.keras, pytest.mark.tf_line]

# How training writes checkpoints: a CheckpointManager of model + optimizer,
# ModelCheckpoint's `.weights.h5` or whole-model `.keras` files (Keras 3 and 2),
# or Keras 2's TensorFlow-format weights.
STYLES = ["manager", "h5", "keras", pytest.param("tf_weights", marks=pytest.mark.skipif(
    toy.KERAS_3, reason="Keras 3 saves weights only as .weights.h5"))]
SUFFIX = {"h5": ".weights.h5", "keras": ".keras", "tf_weights": ""}


class Trainer:
    """Writes `ckpt-N` checkpoints of known quality, in one of the STYLES."""

    def __init__(self, directory, style="h5"):
        self.directory = str(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.style = style
        self.model = toy.build_model()
        # Build the metrics, as in a model that has trained: Keras 2 saves their
        # variables in .weights.h5 files and loads them strictly.
        self.model.evaluate(toy.dataset(), verbose=0)
        self.number = 0
        self.manager = tf.train.CheckpointManager(
            tf.train.Checkpoint(model=self.model, optimizer=self.model.optimizer),
            self.directory, max_to_keep=None)

    def save(self, quality, iterations=None):
        self.number += 1
        toy.set_quality(self.model, quality)
        self.model.optimizer.iterations.assign(
            iterations if iterations is not None else self.number * STEPS_PER_EPOCH)
        if self.style == "manager":
            return self.manager.save()
        path = os.path.join(self.directory, f"ckpt-{self.number}{SUFFIX[self.style]}")
        if self.style == "keras":
            self.model.save(path)  # what ModelCheckpoint(save_weights_only=False) does
        else:
            self.model.save_weights(path)  # what ModelCheckpoint(save_weights_only) does
        return path

    def finish(self):
        record_training_complete(self.directory, self.latest(),
                                 int(self.model.optimizer.iterations.numpy()), None)

    def latest(self):
        latest = latest_keras_checkpoint(self.directory)
        return latest.path if latest else None

    def loss(self):
        return self.model.evaluate(toy.dataset(), verbose=0, return_dict=True)["loss"]


class Schedule:
    """Runs `(time, action)` pairs as the fake clock passes their time."""

    def __init__(self, *events):
        self.events = sorted(events, key=lambda e: e[0])

    def __call__(self, clock):
        while self.events and self.events[0][0] <= clock.now():
            self.events.pop(0)[1]()


@pytest.mark.parametrize("style", STYLES)
def test_evaluates_every_checkpoint_style(tmp_path, style):
    trainer = Trainer(tmp_path, style)
    trainer.save(0.5, iterations=24)
    trainer.finish()
    evaluator = sidecar(tmp_path)
    metrics = evaluator.start()
    assert metrics["global_step"] == 24
    assert metrics["loss"] == pytest.approx(trainer.loss(), rel=1e-5)
    assert set(metrics) == {"loss", "mae", "global_step"}
    assert int(evaluator.target.model.optimizer.iterations.numpy()) == 24
    [line] = metrics_log(tmp_path)
    assert line["checkpoint"].endswith("ckpt-1" + SUFFIX.get(style, "")) and line["step"] == 24
    assert line["metrics"] == metrics and line["duration_secs"] >= 0 and line["time"] > 1.6e9
    assert "last checkpoint" in evaluator.stop_reason


def test_dict_valued_metrics_are_flattened_to_plain_numbers():
    flat = flatten_metrics({"loss": np.float32(0.5), "pr": {"precision": np.float64(0.75),
                                                            "recall": 0.25},
                            "confusion": np.array([[1, 2], [3, 4]])})
    assert flat == {"loss": 0.5, "precision": 0.75, "recall": 0.25,
                    "confusion": [[1, 2], [3, 4]]}
    assert json.dumps(flat)  # fit for the metrics log


def test_tensorboard_gets_eval_summaries_at_the_training_step(tmp_path):
    trainer = Trainer(tmp_path / "ckpts")
    trainer.save(0.5, iterations=40)
    trainer.finish()
    log_dir = tmp_path / "logs"
    sidecar(tmp_path / "ckpts", callbacks=[tf.keras.callbacks.TensorBoard(str(log_dir))]).start()
    events = glob.glob(str(log_dir / "validation" / "events.out.tfevents.*"))
    assert events
    tags = {(value.tag, event.step) for path in events
            for event in tf.compat.v1.train.summary_iterator(path)
            for value in event.summary.value}
    assert ("evaluation_loss_vs_iterations", 40) in tags


def test_max_evaluations_stops_after_that_checkpoint(tmp_path):
    trainer = Trainer(tmp_path)
    clock = FakeClock(0.0)
    clock.on_sleep = Schedule(*[(2 * i, lambda: trainer.save(0.5)) for i in range(1, 5)])
    trainer.save(0.5)
    recorder = RecordingExporter()
    evaluator = sidecar(tmp_path, clock, max_evaluations=3, exporters=[recorder])
    evaluator.start()
    assert names(metrics_log(tmp_path)) == ["ckpt-1", "ckpt-2", "ckpt-3"]
    assert [call["final"] for call in recorder.calls] == [False, False, True]
    assert clock.now() < 6  # did not wait for ckpt-4


def test_checkpoint_without_iterations_is_a_clear_error(tmp_path):
    uncompiled = toy.build_model(compiled=False)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=uncompiled), str(tmp_path), 1).save()
    with pytest.raises(RuntimeError, match=r"`iterations` cannot be loaded from the "
                                           r"checkpoint file.*"
                                           r"tf.train.Checkpoint\(model=model, optimizer"):
        sidecar(tmp_path).start()


@pytest.mark.parametrize("written_last", ["index", "data-00000-of-00001"])
def test_checkpoint_still_being_written_is_waited_for(tmp_path, written_last):
    staging = tmp_path / "staging"
    trainer = Trainer(staging, "manager")
    trainer.save(0.5)
    ckpts = tmp_path / "ckpts"
    ckpts.mkdir()
    for path in glob.glob(str(staging / "ckpt-1.*")):
        if not path.endswith(written_last):
            shutil.copy(path, ckpts)
    prefix = str(ckpts / "ckpt-1")
    point_state_file_at(str(ckpts), prefix)

    def finish_writing():
        shutil.copy(str(staging / f"ckpt-1.{written_last}"), str(ckpts))
        record_training_complete(str(ckpts), prefix, STEPS_PER_EPOCH, None)
    assert_waited_then_evaluated_once(ckpts, finish_writing, trainer.loss())


def test_keras_archive_still_being_written_is_waited_for(tmp_path):
    # A .keras file is a zip written in place: half of it is not yet a zip.
    staging = Trainer(tmp_path / "staging", "keras")
    whole = open(staging.save(0.5), "rb").read()
    ckpts = tmp_path / "ckpts"
    ckpts.mkdir()
    path = ckpts / "ckpt-1.keras"
    path.write_bytes(whole[:len(whole) // 2])

    def finish_writing():
        path.write_bytes(whole)
        record_training_complete(str(ckpts), str(path), STEPS_PER_EPOCH, None)
    assert_waited_then_evaluated_once(ckpts, finish_writing, staging.loss())


def assert_waited_then_evaluated_once(ckpts, finish_writing, loss):
    """A sidecar over `ckpts` while the writer finishes at t=5 (`finish_writing`) waits
    for it, then evaluates once, with the whole checkpoint's `loss`."""
    clock = FakeClock(0.0)
    clock.on_sleep = Schedule((5, finish_writing))
    metrics = sidecar(ckpts, clock).start()
    assert metrics["loss"] == pytest.approx(loss, rel=1e-5)
    assert clock.now() >= 5 and len(metrics_log(ckpts)) == 1


def truncate(path):
    with open(path, "r+b") as f:
        f.truncate(10)


def flip_a_byte(path):
    """Damages a byte of data: of the weights inside a `.keras` zip, else at 40."""
    offset = os.path.getsize(path) // 2 if path.endswith(".keras") else 40
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0xFF]))


@pytest.mark.parametrize("style", STYLES[:3])
@pytest.mark.parametrize("damage", [truncate, flip_a_byte])
def test_corrupt_checkpoint_is_reported_once_and_skipped(tmp_path, caplog, damage, style):
    trainer = Trainer(tmp_path, style)
    trainer.save(0.5)

    def write_truncated():
        path = trainer.save(0.7)
        damage(path + ".data-00000-of-00001" if style == "manager" else path)

    def write_last():
        trainer.save(0.9)
        trainer.finish()
    clock = FakeClock(0.0)
    # After the unreadable wait (60 s), so that ckpt-2 is given up, not superseded.
    clock.on_sleep = Schedule((1, write_truncated), (70, write_last))
    evaluator = sidecar(tmp_path, clock)
    with caplog.at_level(logging.WARNING):
        metrics = evaluator.start()
    assert names(metrics_log(tmp_path)) == ["ckpt-1", "ckpt-3"]
    assert metrics["global_step"] == 3 * STEPS_PER_EPOCH
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "ckpt-2" in errors[0].getMessage()
    # Damage the checkpoint's files show is waited out; damage found only when
    # restoring is retried once.
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) <= 1
    state = json.loads((tmp_path / STATE_FILE).read_text())
    assert names([{"checkpoint": p} for p in state["skipped"]]) == ["ckpt-2"]


def test_checkpoint_of_another_architecture_is_an_error_not_a_skip(tmp_path):
    Trainer(tmp_path).save(0.5)
    wider = tf.keras.Sequential([tf.keras.layers.Input((toy.FEATURES,)),
                                 tf.keras.layers.Dense(2)])
    wider.compile(optimizer="sgd", loss="mse")
    # The words of each Keras line's own shape error.
    with pytest.raises(ValueError, match="incompatible tensor with shape|"
                                         "shape of the target variable|are incompatible"):
        SidecarEvaluator(wider, toy.dataset(), str(tmp_path), clock=FakeClock(0.0),
                         verbose=0).start()


def test_restart_does_not_reevaluate(tmp_path):
    trainer = Trainer(tmp_path, "manager")
    clock = FakeClock(0.0)
    clock.on_sleep = Schedule((2, lambda: trainer.save(0.6)))
    trainer.save(0.5)
    first = sidecar(tmp_path, clock, idle_timeout_secs=10)
    first.start()
    assert names(metrics_log(tmp_path)) == ["ckpt-1", "ckpt-2"]

    clock = FakeClock(0.0)
    clock.on_sleep = Schedule((3, lambda: (trainer.save(0.7), trainer.finish())))
    second = sidecar(tmp_path, clock, idle_timeout_secs=10)
    second.start()
    assert names(metrics_log(tmp_path)) == ["ckpt-1", "ckpt-2", "ckpt-3"]

    clock = FakeClock(0.0)
    third = sidecar(tmp_path, clock)  # all done: stops at once, remembers the metrics
    metrics = third.start()
    assert clock.sleeps == [] and third.evaluations == 0
    assert metrics == metrics_log(tmp_path)[-1]["metrics"]
    assert len(metrics_log(tmp_path)) == 3


def test_final_export_owed_from_before_a_restart_is_done(tmp_path):
    trainer = Trainer(tmp_path)
    trainer.save(0.5)
    recorder = RecordingExporter()
    sidecar(tmp_path, idle_timeout_secs=5, exporters=[recorder]).start()
    trainer.finish()  # training says it is over only after the evaluator stopped
    sidecar(tmp_path, exporters=[recorder]).start()
    sidecar(tmp_path, exporters=[recorder]).start()  # owed once, not on every restart
    assert [(c["step"], c["final"]) for c in recorder.calls] == [(8, False), (8, True)]
    assert len(metrics_log(tmp_path)) == 1


def test_state_of_an_earlier_version_still_prevents_a_second_final_export(tmp_path):
    # Before final_export.json, sidecar_state.json named the final export's checkpoint.
    trainer = Trainer(tmp_path)
    checkpoint = trainer.save(0.5)
    trainer.finish()
    metrics = {"loss": 0.25, "mae": 0.5, "global_step": 8}
    (tmp_path / STATE_FILE).write_text(json.dumps({
        "checkpoint": checkpoint, "global_step": 8, "metrics": metrics, "skipped": [],
        "final_export": checkpoint}))
    recorder = RecordingExporter()
    evaluator = sidecar(tmp_path, exporters=[recorder])
    assert evaluator.start() == metrics
    assert recorder.calls == [] and evaluator.evaluations == 0


def test_evaluators_with_their_own_state_dirs_do_not_share_progress(tmp_path):
    trainer = Trainer(tmp_path / "ckpts")
    trainer.save(0.5)
    trainer.finish()
    for name in ("train-set", "eval-set"):  # state dirs that do not exist yet
        evaluator = sidecar(tmp_path / "ckpts", state_dir=tmp_path / name)
        evaluator.start()
        assert evaluator.evaluations == 1
        assert names(metrics_log(tmp_path / name)) == ["ckpt-1"]
    assert not (tmp_path / "ckpts" / STATE_FILE).exists()


def test_training_complete_callback_stops_the_evaluator(tmp_path):
    model = toy.build_model()
    model.fit(toy.dataset(batch=32).repeat(), steps_per_epoch=STEPS_PER_EPOCH, epochs=3,
              verbose=0, callbacks=[
                  tf.keras.callbacks.ModelCheckpoint(
                      str(tmp_path / "ckpt-{epoch}.weights.h5"), save_weights_only=True),
                  TrainingCompleteCallback(str(tmp_path))])
    record = read_training_complete(str(tmp_path))
    assert record.checkpoint == str(tmp_path / "ckpt-3.weights.h5")
    assert record.global_step == 3 * STEPS_PER_EPOCH
    recorder = RecordingExporter()
    clock = FakeClock(0.0)
    metrics = sidecar(tmp_path, clock, exporters=[recorder]).start()
    assert metrics["global_step"] == 3 * STEPS_PER_EPOCH
    assert [(os.path.basename(c["checkpoint_path"]), c["final"]) for c in recorder.calls] \
        == [("ckpt-3.weights.h5", True)]
    assert clock.sleeps == []


def test_completion_record_of_an_earlier_run_is_ignored(tmp_path):
    trainer = Trainer(tmp_path)
    trainer.save(0.5)
    trainer.finish()  # run 1 ended at ckpt-1 ...
    trainer.save(0.6)  # ... and a new run wrote ckpt-2 without clearing it
    evaluator = sidecar(tmp_path, idle_timeout_secs=5)
    evaluator.start()
    assert "no new checkpoint" in evaluator.stop_reason


def test_idle_timeout_stops(tmp_path):
    Trainer(tmp_path).save(0.5)
    clock = FakeClock(0.0)
    evaluator = sidecar(tmp_path, clock, idle_timeout_secs=30)
    evaluator.start()
    assert evaluator.evaluations == 1 and 30 <= clock.now() <= 32
    assert all(s > 0 for s in clock.sleeps)


def test_throttle_and_listeners(tmp_path):
    trainer = Trainer(tmp_path)
    clock = FakeClock(0.0)
    clock.on_sleep = Schedule(*[(i, lambda: trainer.save(0.5)) for i in range(1, 30)])
    trainer.save(0.5)

    class StopAfterThree(ContinuousEvalListener):
        def __init__(self):
            self.steps = []

        def after_eval(self, eval_result):
            self.steps.append(eval_result.global_step)
            return len(self.steps) < 3
    listener = StopAfterThree()
    starts = []

    class Starts(tf.keras.callbacks.Callback):
        def on_test_begin(self, logs=None):
            starts.append(clock.now())
    sidecar(tmp_path, clock, throttle_secs=10, listeners=[listener],
            callbacks=[Starts()]).start()
    assert len(listener.steps) == 3 and len(metrics_log(tmp_path)) == 3
    assert np.all(np.diff(starts) >= 10)


def test_best_exporter_across_a_restart_keeps_the_better_model(tmp_path):
    trainer = Trainer(tmp_path, "manager")
    exporters = lambda: [BestExporter(metric="loss"), FinalExporter()]
    clock = FakeClock(0.0)
    good = {}
    clock.on_sleep = Schedule((2, lambda: (trainer.save(0.9),
                                           good.update(pred=trainer.model(toy.arrays(8)[0])))))
    trainer.save(0.5)
    sidecar(tmp_path, clock, idle_timeout_secs=5, exporters=exporters()).start()
    best_dir = tmp_path / "export" / "best"
    assert sorted(os.listdir(best_dir)) == ["16", "8", BEST_FILE]

    trainer.save(0.1)  # worse, after a restart that forgot everything in memory
    trainer.finish()
    metrics = sidecar(tmp_path, FakeClock(0.0), exporters=exporters()).start()
    assert metrics["global_step"] == 24
    assert sorted(os.listdir(best_dir)) == ["16", "8", BEST_FILE]
    x = toy.arrays(8)[0]
    np.testing.assert_allclose(toy.serve(str(best_dir / "16"), x), good["pred"].numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(toy.serve(str(tmp_path / "export" / "final" / "24"), x),
                               trainer.model(x).numpy(), rtol=1e-6)


@pytest.mark.parametrize("kwargs,error,words", [
    (dict(model=object()), TypeError, "`model` must be a tf.keras.Model"),
    (dict(checkpoint_dir=""), ConfigError, "`checkpoint_dir` ('') must be"),
    (dict(steps=0), ConfigError, "`steps` (0) must be a positive integer"),
    (dict(max_evaluations=-2), ConfigError, "`max_evaluations` (-2) must be a positive"),
    (dict(callbacks=[print]), TypeError, "`callbacks` must be tf.keras.callbacks.Callback"),
    (dict(exporters=[FinalExporter(), FinalExporter()]), ConfigError, "must be unique"),
    (dict(exporters=[object()]), ConfigError, "needs a non-empty string `name`"),
    (dict(poll_secs=0), ConfigError, "`poll_secs` (0) must be > 0"),
    (dict(first_checkpoint_hint_secs=0), ConfigError,
     "`first_checkpoint_hint_secs` (0) must be > 0 seconds, or None"),
    (dict(idle_timeout_secs=-1), ConfigError, "`idle_timeout_secs` (-1) must be > 0"),
    (dict(listeners=[object()]), TypeError, "ContinuousEvalListener"),
])
def test_bad_arguments(tmp_path, kwargs, error, words):
    args = dict(model=toy.build_model(), data=toy.dataset(), checkpoint_dir=str(tmp_path))
    args.update(kwargs)
    with pytest.raises(error) as info:
        SidecarEvaluator(**args).start()
    assert words in str(info.value)
