"""SidecarEvaluator: a dedicated evaluator for Keras and custom-training-loop runs.

It watches a checkpoint directory and runs `model.evaluate` on each new
checkpoint, on the same continuous loop as the Estimator evaluator
(`trainexec.evaluation.loop`). Compared with `tf.keras.utils.SidecarEvaluator` it
also stops by itself when training is over, skips a corrupt checkpoint instead
of dying, waits for one still being written, runs exporters and listeners, and
resumes where it left off after a restart.

It keeps the Keras class's contract: its public attributes (`model`, `data`,
`steps`, `callbacks`, `checkpoint_dir`, `max_evaluations`), the line
`End of evaluation. Metrics: name=value ...` after each evaluation (beside
trainexec's own `Evaluated <checkpoint> ...`), the errors `start()` raises
(`trainexec.keras.evaluate.target`: a `RuntimeError` for a checkpoint without the
optimizer's `iterations` or an uncompiled model, an `AssertionError` when there
is nothing to load, each also a `ConfigError`), and a hint after 30 s without
any checkpoint (`trainexec.keras.evaluate.first_checkpoint_hint`).

Training writes checkpoints one of two ways:

* a custom loop: `tf.train.CheckpointManager(tf.train.Checkpoint(model=model,
  optimizer=optimizer), checkpoint_dir, ...).save()`, then at the end
  `trainexec.record_training_complete(checkpoint_dir, manager.latest_checkpoint,
  int(optimizer.iterations), None)`;
* `model.fit(..., callbacks=[tf.keras.callbacks.ModelCheckpoint(
  os.path.join(checkpoint_dir, "ckpt-{epoch}.weights.h5"), save_weights_only=True),
  TrainingCompleteCallback(checkpoint_dir)])`, or whole `.keras` files
  (`"ckpt-{epoch}.keras"`); the numbers in the file names order them.

The evaluator keeps `sidecar_state.json` (what it evaluated last) and
`final_export.json` (the final export done, see `trainexec.evaluation.final_export`), and
appends one JSON line per evaluation to `sidecar_metrics.jsonl`, all in
`state_dir` (default: the checkpoint directory). While it runs it holds
`evaluator_lease.json` there (`trainexec.evaluation.lease`): a second evaluator with the
same `state_dir` is refused, naming the one running.

Give each evaluator of the same checkpoints (say, one per eval data set) its
own `state_dir`. Its exports then go to `<state_dir>/export/<exporter name>/`,
with their own `best.json`, instead of `<checkpoint_dir>/export/<exporter
name>/`: evaluators of different data sets neither compare against each
other's best value nor touch each other's exports. With the default
`state_dir` (or `state_dir=checkpoint_dir`) exports stay under
`<checkpoint_dir>/export/`.

Example:
    ```python
    evaluator = SidecarEvaluator(
        model, eval_dataset, "/ckpts", exporters=[BestExporter(metric="loss")],
        callbacks=[tf.keras.callbacks.TensorBoard("/logs")])
    metrics = evaluator.start()        # returns when training is over
    ```
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from typing import Any, Callable, Iterable, Sequence

import tensorflow as tf

from trainexec.records.storage import check_supported, storage_of
from trainexec.records.checkpoints import CheckpointInfo, checkpoint_step
from trainexec.clock import Clock, SystemClock
from trainexec.records.completion import TrainingComplete
from trainexec.records.layout import read_json_file, write_json_record
from trainexec.records.run_state import completion_for_newest
from trainexec.evaluation.listeners import ContinuousEvalListener, ListenerList
from trainexec.evaluation.loop import ContinuousEvaluation
from trainexec.evaluation.policy import LoopPolicy
from trainexec.errors import ConfigError
from trainexec.evaluation.one_pass import EvalResult, EvalStatus, Evaluator
from trainexec.exporter_protocol import ExporterProtocol, validate_exporters
from trainexec.evaluation.final_export import FinalExportRecord, FinalExportSettler, FinalOnce
from trainexec.evaluation.target import GLOBAL_STEP
from trainexec.evaluation.watch import waiter_for
from trainexec.keras.evaluate.first_checkpoint_hint import (FIRST_CHECKPOINT_HINT_SECS,
                                                            HintingWaiter)
from trainexec.keras.evaluate.target import KerasTarget
from trainexec.evaluation.lease import EvaluatorLease, LeaseGuard

__all__ = [
    "METRICS_FILE",
    "STATE_FILE",
    "SidecarEvaluator",
    "SidecarState",
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

    def last_evaluated(self) -> CheckpointInfo | None:
        # Keyed by the file-name number, like the checkpoints the loop sees.
        return CheckpointInfo.from_path(self.checkpoint) if self.checkpoint else None

    def evaluated_result(self) -> EvalResult | None:
        """The last evaluation before a restart, as the loop's result; None if
        there was none (or its metrics lack the step)."""
        if not (self.checkpoint and self.metrics and GLOBAL_STEP in self.metrics):
            return None
        return EvalResult(EvalStatus.EVALUATED, dict(self.metrics), self.checkpoint)


class _StateStore:
    """`sidecar_state.json` (atomic rewrites) and `sidecar_metrics.jsonl` (appends)."""

    def __init__(self, directory: str) -> None:
        self.state_path = os.path.join(directory, STATE_FILE)
        self.metrics_path = os.path.join(directory, METRICS_FILE)
        self.state = SidecarState()
        self.final_exports = FinalExportRecord(directory)

    def load(self, exporter_names: Sequence[str] = ()) -> SidecarState:
        try:
            data = read_json_file(self.state_path)
            self.state = SidecarState() if data is None else SidecarState(
                checkpoint=data.get("checkpoint"), global_step=data.get("global_step"),
                metrics=data.get("metrics"), skipped=tuple(data.get("skipped", ())))
            # Before final_export.json, the state named the checkpoint whose final
            # export (by every exporter) was done.
            legacy = (data or {}).get("final_export")
            if (legacy and legacy == self.state.checkpoint and self.state.metrics
                    and self.final_exports.read() is None):
                self.final_exports.add(legacy, self.state.metrics,
                                       {name: None for name in exporter_names},
                                       complete=True)
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
        # The line tf.keras.utils.SidecarEvaluator logs, which users and tools grep for.
        logger.info("End of evaluation. Metrics: %s", " ".join(
            f"{name}={value}" for name, value in eval_result.metrics.items()
            if name != GLOBAL_STEP))
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


def _on_target(name: str, convert: Callable[[Any], Any] = lambda value: value) -> property:
    """A `SidecarEvaluator` attribute kept on its evaluation target (`self.target.<name>`),
    set through `convert`."""

    def get(self: "SidecarEvaluator") -> Any:
        return getattr(self.target, name)

    def set_(self: "SidecarEvaluator", value: Any) -> None:
        setattr(self.target, name, convert(value))

    return property(get, set_, doc=f"`model.evaluate`'s {name}, kept on the target.")


class SidecarEvaluator:
    """Evaluates each new checkpoint in `checkpoint_dir` until training is over.

    Its attributes `model`, `data`, `steps`, `callbacks`, `checkpoint_dir` and
    `max_evaluations` are the arguments of those names, as in Keras; after
    `start()` `model` holds the weights of the last checkpoint evaluated.

    Args:
      model: a compiled `tf.keras.Model`, the same architecture as in training
        (an uncompiled one fails in `start()`, at the first checkpoint, as in Keras).
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
      exporters: exporters from `trainexec.keras.evaluate.exporters`, run after each evaluation;
        each one's final export happens once, across restarts too.
      state_dir: where the state, the metrics log and the lease live (default
        checkpoint_dir). Another directory also gets this evaluator's exports,
        `<state_dir>/export/<name>/` (see the module doc).
      first_checkpoint_hint_secs: after this long without any checkpoint, log
        once where the evaluator looks and the checkpoint forms it reads (None:
        never).
      clock: time source (tests pass a fake one).
      verbose: `model.evaluate` verbosity.

    Example:
        ```python
        metrics = SidecarEvaluator(model, dataset, "/ckpts", max_evaluations=10).start()
        ```
    """

    def __init__(self, model: Any, data: Any, checkpoint_dir: str | os.PathLike[str],
                 steps: int | None = None, max_evaluations: int | None = None,
                 callbacks: Sequence[Any] | None = None, *, throttle_secs: float = 0,
                 poll_secs: float = 1.0, idle_timeout_secs: float | None = None,
                 listeners: Iterable[ContinuousEvalListener] | None = None,
                 exporters: Sequence[ExporterProtocol] | None = None,
                 state_dir: str | os.PathLike[str] | None = None, clock: Clock | None = None,
                 verbose: int | str = 2,
                 first_checkpoint_hint_secs: float | None = FIRST_CHECKPOINT_HINT_SECS
                 ) -> None:
        _check_args(model, checkpoint_dir, steps, max_evaluations, callbacks, exporters)
        if first_checkpoint_hint_secs is not None and not first_checkpoint_hint_secs > 0:
            raise ConfigError(f"`first_checkpoint_hint_secs` ({first_checkpoint_hint_secs!r})"
                              " must be > 0 seconds, or None for no hint")
        self._hint_secs = first_checkpoint_hint_secs
        self.checkpoint_dir = os.fspath(checkpoint_dir)
        check_supported(self.checkpoint_dir, "checkpoint_dir")
        self.max_evaluations = max_evaluations
        self._clock = clock or SystemClock()
        # A restarted evaluator stops at once when its last checkpoint is done:
        # `_completion_for` already ignores an earlier run's record (it names a
        # checkpoint older than the newest), so no grace period is needed.
        self._policy = LoopPolicy.for_storage(storage_of(self.checkpoint_dir),
                                              throttle_secs=throttle_secs,
                                              poll_secs=poll_secs,
                                              idle_timeout_secs=idle_timeout_secs,
                                              stale_record_grace_secs=0)
        self._listeners = list(listeners or [])
        self.state_dir = os.fspath(state_dir) if state_dir else self.checkpoint_dir
        self._store = _StateStore(self.state_dir)
        self.export_dir = os.path.join(
            self.state_dir if _own_dir(self.state_dir, self.checkpoint_dir)
            else self.checkpoint_dir, "export")
        self._exporter_names = [e.name for e in exporters or ()]
        self._exporters = tuple(
            FinalOnce(e, self._store.final_exports)
            for e in exporters or ())
        self.target = KerasTarget(
            model, data, self.checkpoint_dir, steps, callbacks or [], verbose,
            self._clock, retry_secs=poll_secs)
        self.stop_reason = ""
        self.evaluations = 0
        self._stale_warned = False

    # Keras's attributes of the arguments that reach `model.evaluate`; the target
    # uses them, so a change before `start()` counts, as in Keras.
    model = _on_target("model")
    data = _on_target("data")
    steps = _on_target("steps")
    callbacks = _on_target("callbacks", lambda callbacks: list(callbacks or []))

    def start(self) -> dict[str, Any] | None:
        """Evaluates until training is over (or a stop condition); returns the
        last metrics, including `global_step`, or None if nothing was evaluated.

        Raises `trainexec.evaluation.lease.EvaluatorAlreadyRunning` when another evaluator
        holds this `state_dir`, and at the first checkpoint, as Keras does,
        `trainexec.keras.evaluate.target.NothingToLoadError` (an AssertionError),
        `MissingIterationsError` or `ModelNotCompiledError` (RuntimeErrors).
        """
        with EvaluatorLease(self.state_dir,
                            f"SidecarEvaluator of {self.checkpoint_dir}") as lease:
            return self._start(lease)

    def _start(self, lease: EvaluatorLease) -> dict[str, Any] | None:
        state = self._store.load(self._exporter_names)
        evaluator = Evaluator(self.target, self._exporters, clock=self._clock,
                              export_dir=self.export_dir)
        resumed = state.evaluated_result()
        if resumed is not None:
            # Evaluated before a restart: if the run turns out to be over at
            # it, its final export (when still owed) is settled from it,
            # without evaluating it again.
            evaluator.last_result = resumed
            logger.info("Resuming: %s (step %s) was evaluated before a restart",
                        state.checkpoint, state.global_step)
        waiter = waiter_for(self.checkpoint_dir, self._clock, self._policy.poll_secs)
        if self._hint_secs is not None:
            waiter = HintingWaiter(
                waiter, self._clock, self.checkpoint_dir, after_secs=self._hint_secs,
                has_checkpoint=lambda: self.target.latest_checkpoint() is not None)
        loop = ContinuousEvaluation(
            evaluator, self.target, self._policy,
            ListenerList([LeaseGuard(lease), _Recorder(self._store, self.target),
                          *self._listeners]),
            self._clock, completion_filter=self._completion_for,
            already_evaluated=state.last_evaluated(), already_skipped=state.skipped,
            settler=FinalExportSettler(evaluator, self._store.final_exports,
                                       self._exporter_names),
            waiter=waiter)
        try:
            loop.run()
        finally:
            waiter.close()
        self.stop_reason, self.evaluations = loop.stop_reason, loop.evaluations
        logger.info("SidecarEvaluator stops after %s evaluation(s): %s",
                    loop.evaluations, loop.stop_reason)
        if loop.last_result is not None:
            return dict(loop.last_result.metrics)
        return dict(state.metrics) if state.metrics else None

    def _completion_for(self, record: TrainingComplete | None,
                        latest: str | None) -> TrainingComplete | None:
        """Training is over when it says so, or when checkpoint `max_evaluations` exists.

        A record naming an older checkpoint than the newest (`latest`) is from
        an earlier run and is ignored.
        """
        if record is None and not self.max_evaluations:
            return None
        if record is not None:
            if completion_for_newest(record, latest) is not None:
                return record
            if not self._stale_warned:
                self._stale_warned = True
                logger.warning("Ignoring the completion record for %s: %s is newer, "
                               "so it is from an earlier run", record.checkpoint, latest)
        latest_number = checkpoint_step(latest) if latest else None
        if (self.max_evaluations and latest_number is not None
                and latest_number >= self.max_evaluations):
            return TrainingComplete(global_step=None, checkpoint=latest, max_steps=None,
                                    finished_at=time.time())
        return None


def _check_args(model, checkpoint_dir, steps, max_evaluations, callbacks, exporters):
    if not isinstance(model, tf.keras.Model):
        raise TypeError(f"`model` must be a tf.keras.Model, got {type(model).__name__}")
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
    validate_exporters(exporters)


def _own_dir(state_dir: str, checkpoint_dir: str) -> bool:
    """Whether `state_dir` is another directory than `checkpoint_dir`."""
    def normal(path: str) -> str:
        return path.rstrip("/") if "://" in path else os.path.realpath(path)
    return normal(state_dir) != normal(checkpoint_dir)
