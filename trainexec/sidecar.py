"""SidecarEvaluator: a dedicated evaluator for Keras and custom-training-loop runs.

It watches a checkpoint directory and runs `model.evaluate` on each new
checkpoint, on the same continuous loop as the Estimator evaluator
(`trainexec.continuous`). Compared with `tf.keras.utils.SidecarEvaluator` it
also stops by itself when training is over, skips a corrupt checkpoint instead
of dying, waits for one still being written, runs exporters and listeners, and
resumes where it left off after a restart.

Training writes checkpoints one of two ways:

* a custom loop: `tf.train.CheckpointManager(tf.train.Checkpoint(model=model,
  optimizer=optimizer), checkpoint_dir, ...).save()`, then at the end
  `trainexec.record_training_complete(checkpoint_dir, manager.latest_checkpoint,
  int(optimizer.iterations), None)`;
* `model.fit(..., callbacks=[tf.keras.callbacks.ModelCheckpoint(
  os.path.join(checkpoint_dir, "ckpt-{epoch}.weights.h5"), save_weights_only=True),
  TrainingCompleteCallback(checkpoint_dir)])`, or whole `.keras` files
  (`"ckpt-{epoch}.keras"`); the numbers in the file names order them.

The evaluator keeps `sidecar_state.json` (what it evaluated last) and appends
one JSON line per evaluation to `sidecar_metrics.jsonl`, both in `state_dir`
(default: the checkpoint directory). Give each evaluator of the same
checkpoints (say, one per eval data set) its own `state_dir`.

Example::

    evaluator = SidecarEvaluator(
        model, eval_dataset, "/ckpts", exporters=[BestExporter(metric="loss")],
        callbacks=[tf.keras.callbacks.TensorBoard("/logs")])
    metrics = evaluator.start()        # returns when training is over
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from typing import Any, Iterable, Sequence

import tensorflow as tf

from trainexec.checkpoints import (CheckpointInfo, checkpoint_order, checkpoint_step,
                                   latest_keras_checkpoint)
from trainexec.clock import Clock, SystemClock
from trainexec.completion import (TrainingComplete, clear_training_complete, read_json_file,
                                  read_training_complete, record_training_complete,
                                  write_json_record)
from trainexec.continuous import (ContinuousEvalListener, ContinuousEvaluation,
                                  ListenerList, LoopPolicy)
from trainexec.errors import ConfigError
from trainexec.evaluation import EvalResult, EvalStatus, Evaluator
from trainexec.keras_target import KerasTarget

__all__ = [
    "METRICS_FILE",
    "STATE_FILE",
    "SidecarEvaluator",
    "SidecarState",
    "TrainingCompleteCallback",
]

logger = logging.getLogger(__name__)

STATE_FILE = "sidecar_state.json"
METRICS_FILE = "sidecar_metrics.jsonl"

@dataclasses.dataclass(frozen=True)
class SidecarState:
    """What a sidecar evaluator has done, kept across restarts."""

    checkpoint: str | None = None
    global_step: int | None = None
    metrics: dict | None = None
    skipped: tuple = ()
    final_export: str | None = None  # the checkpoint whose final export is done

    def last_evaluated(self) -> CheckpointInfo | None:
        # Keyed by the file-name number, like the checkpoints the loop sees.
        return CheckpointInfo.from_path(self.checkpoint) if self.checkpoint else None


class _StateStore:
    """`sidecar_state.json` (atomic rewrites) and `sidecar_metrics.jsonl` (appends)."""

    def __init__(self, directory: str) -> None:
        self.state_path = os.path.join(directory, STATE_FILE)
        self.metrics_path = os.path.join(directory, METRICS_FILE)
        self.state = SidecarState()

    def load(self) -> SidecarState:
        try:
            data = read_json_file(self.state_path)
            self.state = SidecarState() if data is None else SidecarState(
                checkpoint=data.get("checkpoint"), global_step=data.get("global_step"),
                metrics=data.get("metrics"), skipped=tuple(data.get("skipped", ())),
                final_export=data.get("final_export"))
        except (ValueError, TypeError, AttributeError) as err:
            logger.warning("Ignoring unreadable evaluator state %s (%s); starting afresh",
                           self.state_path, err)
            self.state = SidecarState()
        return self.state

    def update(self, **changes: Any) -> None:
        self.state = dataclasses.replace(self.state, **changes)
        write_json_record(self.state_path, self.state)

    def append_metrics(self, record: dict[str, Any]) -> None:
        tf.io.gfile.makedirs(os.path.dirname(self.metrics_path))
        with tf.io.gfile.GFile(self.metrics_path, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()


class _Recorder(ContinuousEvalListener):
    """After each evaluation: one metrics line, then the state (restart point)."""

    def __init__(self, store: _StateStore, target: KerasTarget) -> None:
        self._store = store
        self._target = target

    def after_eval(self, eval_result: EvalResult) -> bool:
        self._store.append_metrics({
            "checkpoint": eval_result.checkpoint_path,
            "step": eval_result.global_step,
            "metrics": eval_result.metrics,
            "duration_secs": round(self._target.last_duration_secs, 6),
            "time": time.time()})
        self._store.update(checkpoint=eval_result.checkpoint_path,
                           global_step=eval_result.global_step,
                           metrics=dict(eval_result.metrics))
        return True

    def on_skip(self, checkpoint_path: str) -> None:
        skipped = tuple(sorted(set(self._store.state.skipped) | {checkpoint_path}))
        self._store.update(skipped=skipped)


class SidecarEvaluator:
    """Evaluates each new checkpoint in `checkpoint_dir` until training is over.

    Args:
      model: a compiled `tf.keras.Model`, the same architecture as in training.
      data: what `model.evaluate` takes as `x`, e.g. a `tf.data.Dataset`.
      checkpoint_dir: where training writes checkpoints (see the module doc).
      steps: batches per evaluation; None runs the data to its end.
      max_evaluations: stop after the checkpoint whose file name ends in
        `-<max_evaluations>` (or a later one). Not needed when training records
        its completion.
      callbacks: Keras callbacks for `model.evaluate` (e.g. TensorBoard).
      throttle_secs: minimum seconds between evaluation starts (the last
        checkpoint is never throttled).
      poll_secs: how often to look for a new checkpoint.
      idle_timeout_secs: stop after this long without a new checkpoint.
      listeners: `ContinuousEvalListener`s; one returning False stops the loop.
      exporters: exporters from `trainexec.exporters`, run after each evaluation.
      state_dir: where the state and metrics log live (default checkpoint_dir).
      clock: time source (tests pass a fake one).
      verbose: `model.evaluate` verbosity.

    Example::

        metrics = SidecarEvaluator(model, dataset, "/ckpts", max_evaluations=10).start()
    """

    def __init__(self, model: Any, data: Any, checkpoint_dir: str | os.PathLike,
                 steps: int | None = None, max_evaluations: int | None = None,
                 callbacks: Sequence[Any] | None = None, *, throttle_secs: float = 0,
                 poll_secs: float = 1.0, idle_timeout_secs: float | None = None,
                 listeners: Iterable[ContinuousEvalListener] | None = None,
                 exporters: Sequence[Any] | None = None,
                 state_dir: str | os.PathLike | None = None, clock: Clock | None = None,
                 verbose: int | str = 2) -> None:
        _check_args(model, checkpoint_dir, steps, max_evaluations, callbacks, exporters)
        self.checkpoint_dir = os.fspath(checkpoint_dir)
        self.max_evaluations = max_evaluations
        self._clock = clock or SystemClock()
        # A restarted evaluator stops at once when its last checkpoint is done:
        # `_completion_for` already ignores an earlier run's record (it names a
        # checkpoint older than the newest), so no grace period is needed.
        self._policy = LoopPolicy(throttle_secs=throttle_secs, poll_secs=poll_secs,
                                  idle_timeout_secs=idle_timeout_secs,
                                  stale_record_grace_secs=0)
        self._listeners = list(listeners or [])
        self._exporters = tuple(exporters or ())
        self._store = _StateStore(os.fspath(state_dir) if state_dir else self.checkpoint_dir)
        self.target = KerasTarget(
            model, data, self.checkpoint_dir, steps, callbacks or [], verbose,
            self._clock, retry_secs=poll_secs)
        self.stop_reason = ""
        self.evaluations = 0
        self._stale_warned = False

    def start(self) -> dict[str, Any] | None:
        """Evaluates until training is over (or a stop condition); returns the
        last metrics, including `global_step`, or None if nothing was evaluated."""
        state = self._store.load()
        evaluator = Evaluator(self.target, self._exporters, clock=self._clock)
        loop = ContinuousEvaluation(
            evaluator, self.target,
            self._policy, ListenerList([_Recorder(self._store, self.target),
                                        *self._listeners]),
            self._clock, completion_filter=self._completion_for,
            already_evaluated=state.last_evaluated(), already_skipped=state.skipped)
        if state.checkpoint:
            logger.info("Resuming: %s (step %s) was evaluated before a restart",
                        state.checkpoint, state.global_step)
        loop.run()
        self._settle_final_export(evaluator, loop)
        self.stop_reason, self.evaluations = loop.stop_reason, loop.evaluations
        logger.info("SidecarEvaluator stops after %s evaluation(s): %s",
                    loop.evaluations, loop.stop_reason)
        if loop.last_result is not None:
            return dict(loop.last_result.metrics)
        return dict(state.metrics) if state.metrics else None

    def _settle_final_export(self, evaluator: Evaluator, loop: ContinuousEvaluation) -> None:
        state = self._store.state
        if evaluator.is_final_export_triggered:
            self._store.update(final_export=loop.last_evaluated.path)
            return
        # An earlier run evaluated the last checkpoint but stopped (idle timeout,
        # restart) before training recorded its end: the final export is owed.
        if not (loop.last_result is None and state.checkpoint and state.metrics
                and state.final_export != state.checkpoint):
            return
        latest = self.target.latest_checkpoint()
        if (latest == state.checkpoint and self._completion_for(
                read_training_complete(self.checkpoint_dir), latest) is not None):
            logger.info("Final export of %s, evaluated before a restart", state.checkpoint)
            evaluator.export(EvalResult(EvalStatus.EVALUATED, dict(state.metrics),
                                        state.checkpoint), True)
            self._store.update(final_export=state.checkpoint)

    def _completion_for(self, record: TrainingComplete | None,
                        latest: str | None) -> TrainingComplete | None:
        """Training is over when it says so, or when checkpoint `max_evaluations` exists.

        A record naming an older checkpoint than the newest (`latest`) is from
        an earlier run and is ignored.
        """
        if record is None and not self.max_evaluations:
            return None
        latest_number = checkpoint_step(latest) if latest else None
        if record is not None:
            latest_order = checkpoint_order(latest) if latest else None
            recorded = checkpoint_order(record.checkpoint) if record.checkpoint else None
            if latest_order is not None and recorded is not None and latest_order > recorded:
                if not self._stale_warned:
                    self._stale_warned = True
                    logger.warning("Ignoring the completion record for %s: %s is newer, "
                                   "so it is from an earlier run", record.checkpoint, latest)
            else:
                return record
        if (self.max_evaluations and latest_number is not None
                and latest_number >= self.max_evaluations):
            return TrainingComplete(global_step=None, checkpoint=latest, max_steps=None,
                                    finished_at=time.time())
        return None


def _check_args(model, checkpoint_dir, steps, max_evaluations, callbacks, exporters):
    if not isinstance(model, tf.keras.Model):
        raise TypeError(f"`model` must be a tf.keras.Model, got {type(model).__name__}")
    if getattr(model, "optimizer", None) is None:
        raise ConfigError("`model` is not compiled; call model.compile(optimizer=..., "
                          "loss=..., metrics=[...]) before SidecarEvaluator")
    if not checkpoint_dir or not isinstance(checkpoint_dir, (str, os.PathLike)):
        raise ConfigError(f"`checkpoint_dir` ({checkpoint_dir!r}) must be the directory "
                          "training writes checkpoints to")
    for field, value in (("steps", steps), ("max_evaluations", max_evaluations)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ConfigError(f"`{field}` ({value!r}) must be a positive integer or None")
    for callback in callbacks or []:
        if not isinstance(callback, tf.keras.callbacks.Callback):
            raise TypeError("`callbacks` must be tf.keras.callbacks.Callback instances, "
                            f"got {type(callback).__name__}")
    names = [getattr(e, "name", None) for e in exporters or ()]
    for exporter, name in zip(exporters or (), names):
        if not isinstance(name, str) or not name or not callable(getattr(exporter, "export", None)):
            raise ConfigError(f"exporter {exporter!r} needs a non-empty string `name` and "
                              "an export(...) method; see trainexec.exporters")
    if len(set(names)) != len(names):
        raise ConfigError(f"exporter names {names} must be unique: each names a "
                          "directory under <checkpoint_dir>/export/")


class TrainingCompleteCallback(tf.keras.callbacks.Callback):
    """Records in `checkpoint_dir` that `model.fit` finished, for evaluators to stop.

    On `on_train_begin` it clears an earlier run's record; on `on_train_end` it
    records the latest checkpoint (a `.weights.h5` / `.keras` file or a
    TensorFlow checkpoint) and the optimizer `iterations`. Only the task
    that writes checkpoints (the chief) records. Put it after `ModelCheckpoint`.

    Example::

        model.fit(data, epochs=10, callbacks=[
            tf.keras.callbacks.ModelCheckpoint(
                os.path.join(checkpoint_dir, "ckpt-{epoch}.weights.h5"),
                save_weights_only=True),
            TrainingCompleteCallback(checkpoint_dir)])
    """

    def __init__(self, checkpoint_dir: str | os.PathLike) -> None:
        super().__init__()
        self.checkpoint_dir = os.fspath(checkpoint_dir)

    def _is_chief(self) -> bool:
        return bool(self.model.distribute_strategy.extended.should_checkpoint)

    def on_train_begin(self, logs=None):
        if self._is_chief():
            clear_training_complete(self.checkpoint_dir)

    def on_train_end(self, logs=None):
        if not self._is_chief():
            return
        optimizer = getattr(self.model, "optimizer", None)
        step = int(optimizer.iterations.numpy()) if optimizer is not None else None
        latest = latest_keras_checkpoint(self.checkpoint_dir)
        record_training_complete(self.checkpoint_dir, latest.path if latest else None,
                                 step, None)
