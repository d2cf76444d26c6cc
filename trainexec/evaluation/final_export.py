"""The final export, once per run: a durable record of it, kept by both evaluators.

An evaluator restarted after it exported the run's last checkpoint as final
must not export it again. Each exporter is wrapped in `FinalOnce`: right after
an exporter's final export returns, `<state dir>/final_export.json` records
it (atomically); a restarted evaluator's wrapper finds it there and returns
the recorded result instead of exporting again. Once every exporter is done
and the evaluation is over, the record is marked `complete` with the
metrics, so a restarted evaluator can stop at once and report them:

```json
{"checkpoint": "/m/model.ckpt-1000", "checkpoint_written_nsec": 1763..., "global_step": 1000,
 "metrics": {"loss": 0.12, "global_step": 1000},
 "exports": {"final": ["/m/export/final/1763772000", true]}, "complete": true,
 "recorded_at": 1763772001.5}
```

A checkpoint is the same one when its name and the modification time of its
index (or Keras file) are: a run started afresh that writes a checkpoint of
the same name again is exported again. The state directory is the
`SidecarEvaluator`'s `state_dir` and `<model_dir>/trainexec/eval` (or
`eval_<EvalSpec.name>`) for the Estimator evaluator task (`estimator_state_dir`).

Example:
    ```python
    record = FinalExportRecord(state_dir)
    exporters = [FinalOnce(e, record) for e in exporters]
    ...                                   # evaluate and export as usual
    done = record.read()
    if done and done.complete and record.is_for(done, latest_checkpoint): ...
    ```
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from typing import Any, Mapping, Sequence, TypeGuard

from trainexec.evaluation.staged_export import export_staged, needs_staging
from trainexec.records.checkpoints import is_keras_file
from trainexec.records.layout import (eval_state_dir, mtime_nsec, read_record, record_path,
                               write_json_record)
from trainexec.evaluation.listeners import ContinuousEvalListener

__all__ = ["FINAL_EXPORT_FILE", "FinalExport", "FinalExportRecord", "FinalExportSettler",
           "FinalOnce", "estimator_state_dir"]

logger = logging.getLogger(__name__)

FINAL_EXPORT_FILE = "final_export.json"


def estimator_state_dir(model_dir: str, eval_name: str | None) -> str:
    """The Estimator evaluator's state directory: `<model_dir>/trainexec/eval[_<name>]`."""
    return eval_state_dir(model_dir, eval_name)


@dataclasses.dataclass(frozen=True)
class FinalExport:
    """What the record holds (see the module doc)."""

    checkpoint: str
    checkpoint_written_nsec: int | None
    global_step: int | None
    metrics: dict
    exports: dict  # exporter name -> [what its export returned, as text; was it bytes]
    complete: bool
    recorded_at: float

    def export_result(self, name: str) -> Any:
        """What exporter `name` returned for the final export (bytes as it was)."""
        value, was_bytes = self.exports[name]
        return value.encode() if was_bytes and value is not None else value

    def export_results(self, names: Sequence[str]) -> list:
        return [self.export_result(name) if name in self.exports else None
                for name in names]


def _written_nsec(checkpoint: str) -> int | None:
    try:
        return mtime_nsec(checkpoint if is_keras_file(checkpoint) else checkpoint + ".index")
    except OSError:
        return None


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _plain(value: Any) -> Any:
    """`value` as plain JSON types (numpy numbers and arrays, bytes)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class FinalExportRecord:
    """`<directory>/final_export.json`: read, add an exporter's result, complete."""

    def __init__(self, directory: str) -> None:
        self.path = record_path(directory, FINAL_EXPORT_FILE)

    def read(self) -> FinalExport | None:
        return read_record(self.path, lambda data: FinalExport(**data), "final-export record")

    def is_for(self, record: FinalExport | None,
               checkpoint: str | None) -> TypeGuard[FinalExport]:
        """Whether `record` is about `checkpoint` (this very file, not a namesake); a
        None record is about nothing."""
        if record is None or not checkpoint:
            return False
        if _basename(record.checkpoint) != _basename(checkpoint):
            return False
        written = _written_nsec(checkpoint)
        recorded = record.checkpoint_written_nsec
        if recorded is None or written is None or written == recorded:
            return True
        # Recorded in whole seconds (TensorFlow's stat of a local file, by
        # earlier versions): the same second is the same file.
        return recorded % 1_000_000_000 == 0 and written // 1_000_000_000 == recorded // 1_000_000_000

    def done_for(self, checkpoint: str | None,
                 names: Sequence[str] = ()) -> FinalExport | None:
        """The complete record of `checkpoint`'s final export, with a result of
        every exporter in `names` (one added since still owes it), or None."""
        record = self.read()
        if (record is None or not record.complete or not self.is_for(record, checkpoint)
                or not set(names) <= set(record.exports)):
            return None
        return record

    def add(self, checkpoint: str, metrics: Mapping[str, Any],
            results: Mapping[str, Any] | None = None, complete: bool = False) -> FinalExport:
        """Records exporters' final results for `checkpoint` (a new checkpoint
        starts a new record); `complete` marks the final evaluation done."""
        current = self.read()
        exports = dict(current.exports) if self.is_for(current, checkpoint) else {}
        for name, value in (results or {}).items():
            exports[name] = [None if value is None else _plain(value),
                             isinstance(value, bytes)]
        plain_metrics: dict = _plain(dict(metrics))
        step = plain_metrics.get("global_step")
        record = FinalExport(
            checkpoint=checkpoint, checkpoint_written_nsec=_written_nsec(checkpoint),
            global_step=None if step is None else int(step), metrics=plain_metrics,
            exports=exports, complete=complete, recorded_at=time.time())
        write_json_record(self.path, record)
        return record


class FinalOnce:
    """Wraps an exporter so that its final export of a checkpoint happens once.

    Non-final exports pass through. A final export already in the record (a
    restarted evaluator) returns the recorded result without exporting;
    otherwise the exporter runs and its result is recorded at once.
    """

    def __init__(self, exporter: Any, record: FinalExportRecord) -> None:
        self.exporter = exporter
        self.name = exporter.name
        self._record = record

    # It stages an exporter that needs it itself (below), so that the result it
    # records is the published export, not the staging directory.
    publishes_whole_exports = True

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        if is_the_final_export:
            done = self._record.read()
            if self._record.is_for(done, checkpoint_path) and self.name in done.exports:
                logger.info("Exporter %s already exported %s as final (recorded in %s); "
                            "not exporting it again", self.name, checkpoint_path,
                            self._record.path)
                return done.export_result(self.name)
        export = (functools.partial(export_staged, self.exporter)
                  if needs_staging(self.exporter, export_path) else self.exporter.export)
        result = export(
            estimator=estimator, export_path=export_path, checkpoint_path=checkpoint_path,
            eval_result=eval_result, is_the_final_export=is_the_final_export)
        if is_the_final_export:
            self._record.add(checkpoint_path, eval_result, {self.name: result})
        return result

    def __repr__(self) -> str:
        return f"FinalOnce({self.exporter!r})"


class FinalExportSettler(ContinuousEvalListener):
    """The one place that settles a run's final export, for every evaluator.

    The final export of the run's last checkpoint is owed once the run is
    over. It is made during an evaluation (the loop evaluated the checkpoint as
    final), or when the loop stops because the run turned out to be over after
    the last checkpoint was evaluated as not final (`run_over`: only exporters
    that declined then are called), or after a restart, for a result evaluated
    before it (the evaluator's `last_result` seeded from saved state). With a
    `record`, the export is recorded complete, with the metrics and every
    exporter's result, as soon as it is made, so a restarted evaluator can stop
    at once and report them.

    Example:
        ```python
        settler = FinalExportSettler(evaluator, FinalExportRecord(state_dir), names)
        loop = ContinuousEvaluation(evaluator, target, policy, settler=settler, ...)
        ```
    """

    def __init__(self, evaluator: Any, record: FinalExportRecord | None = None,
                 names: Sequence[str] = ()) -> None:
        self._evaluator = evaluator
        self._record = record
        self._names = list(names)
        self.completed: FinalExport | None = None

    def after_eval(self, eval_result) -> bool:
        if self._evaluator.is_final_export_triggered:
            self._record_complete(self._evaluator.last_result)
        return True

    def run_over(self) -> list:
        """The run is over and its last checkpoint is the evaluator's last
        result: makes the final export of it if it is still owed and records it.
        Returns the exporters' results for it ([] when nothing was evaluated)."""
        result = self._evaluator.last_result
        if result is None:
            return []
        if not self._evaluator.is_final_export_triggered:
            self._evaluator.export_final(result)
        self._record_complete(result)
        return self._evaluator.last_export_results

    def _record_complete(self, result) -> None:
        if (self._record is None or result is None
                or (self.completed is not None
                    and self.completed.checkpoint == result.checkpoint_path)):
            return
        exports = self._evaluator.last_export_results
        results = dict(zip(self._names, exports)) if len(exports) == len(self._names) else {}
        self.completed = self._record.add(result.checkpoint_path, result.metrics, results,
                                          complete=True)
        logger.info("Recorded the final export of %s in %s", result.checkpoint_path,
                    self._record.path)
