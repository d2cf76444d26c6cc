"""One evaluation pass: find checkpoint -> evaluate -> export -> `EvalResult`.

The pass talks to the model through `EvaluationTarget`, so Estimators (see
`trainexec.estimator_trainer.target.EstimatorTarget`) and Keras models
(`trainexec.keras.evaluate.sidecar`) share it. It never evaluates a checkpoint whose
files are still being written.

Example:
    ```python
    evaluator = Evaluator(target, exporters=eval_spec.exporters, max_training_steps=1000)
    result, exports = evaluator.evaluate_and_export()
    if result.status == EvalStatus.EVALUATED:
        print(result.metrics["loss"])
    ```
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any, NamedTuple, Sequence

from trainexec.evaluation.staged_export import export_staged, needs_staging
from trainexec.records import checkpoints
from trainexec.clock import Clock, SystemClock
from trainexec.evaluation.target import GLOBAL_STEP, EvaluationTarget

__all__ = ["EvalResult", "EvalStatus", "Evaluator", "RateLimitedLog"]

logger = logging.getLogger(__name__)

class EvalStatus:
    """What one evaluation pass found.

    EVALUATED: a new checkpoint was evaluated.
    MISSING_CHECKPOINT: there is no (complete) checkpoint yet.
    NO_NEW_CHECKPOINT: nothing newer than the last evaluated checkpoint.
    """

    EVALUATED = "evaluated"
    MISSING_CHECKPOINT = "missing checkpoint"
    NO_NEW_CHECKPOINT = "no new checkpoint"


class EvalResult(NamedTuple("EvalResult", [
        ("status", str), ("metrics", Any), ("checkpoint_path", Any)])):
    """The outcome of one pass; metrics and checkpoint only when EVALUATED."""

    __slots__ = ()

    def __new__(cls, status, metrics=None, checkpoint_path=None):
        if status != EvalStatus.EVALUATED:
            if metrics:
                raise ValueError(
                    f"metrics must be `None` if status is not {EvalStatus.EVALUATED}; "
                    f"got status {status}, metrics {metrics}")
            if checkpoint_path:
                raise ValueError(
                    f"checkpoint must be `None` if status is not {EvalStatus.EVALUATED}; "
                    f"got status {status}, checkpoint_path {checkpoint_path}")
            return super().__new__(cls, status, metrics, checkpoint_path)
        if not metrics:
            raise ValueError(
                "Internal error: `Estimator.evaluate` should never return empty metrics.")
        if not isinstance(metrics, dict):
            raise TypeError(
                f"`Estimator.evaluate` should return dict. Given {type(metrics)}.")
        if GLOBAL_STEP not in metrics:
            raise ValueError(
                "Internal error: `Estimator.evaluate` result should have `global_step` "
                f"in result. Given {metrics}")
        if not checkpoint_path:
            raise ValueError("Internal error: `checkpoint_path` should never be empty.")
        return super().__new__(cls, status, metrics, checkpoint_path)

    @property
    def global_step(self) -> int | None:
        return None if not self.metrics else int(self.metrics[GLOBAL_STEP])


class RateLimitedLog:
    """Logs a warning at most once per `interval_secs` (default 10 minutes)."""

    def __init__(self, clock: Clock | None = None, interval_secs: float = 600.0) -> None:
        self._clock = clock or SystemClock()
        self._interval = interval_secs
        self._last: float | None = None

    def warning(self, message: str, *args: Any) -> bool:
        now = self._clock.now()
        if self._last is not None and now - self._last < self._interval:
            return False
        self._last = now
        logger.warning(message, *args)
        return True

    def reset(self) -> None:
        self._last = None


class Evaluator:
    """Evaluates the newest complete checkpoint once and runs the exporters."""

    def __init__(self, target: EvaluationTarget, exporters: Sequence[Any] = (),
                 max_training_steps: int | None = None, clock: Clock | None = None,
                 warn_interval_secs: float = 600.0, export_dir: str | None = None) -> None:
        self._target = target
        # Exporter `name` writes under <export_dir>/<name> (default <model_dir>/export).
        self._export_dir = export_dir
        self._exporters = tuple(exporters)
        self._max_training_steps = max_training_steps
        self._warnings = RateLimitedLog(clock, warn_interval_secs)
        self.previous_checkpoint_path: str | None = None
        self.last_result: EvalResult | None = None
        self.last_export_results: list = []
        self.is_final_export_triggered = False

    def evaluate_and_export(self, checkpoint_path: str | None = None,
                            is_final: bool = False,
                            check_complete: bool = True) -> tuple[EvalResult, list]:
        """Evaluates `checkpoint_path` (default: the latest) and exports.

        `is_final` forces `is_the_final_export=True`; otherwise it is True when
        the evaluated global step reached `max_training_steps`. Pass
        `check_complete=False` only for a checkpoint the caller found complete.
        """
        path = checkpoint_path or self._target.latest_checkpoint()
        if not path:
            self._warnings.warning(
                "Estimator is not trained yet. Will start an evaluation when a "
                "checkpoint is ready.")
            return EvalResult(EvalStatus.MISSING_CHECKPOINT), []
        if path == self.previous_checkpoint_path:
            self._warnings.warning(
                "No new checkpoint ready for evaluation; the last one evaluated "
                "was %s.", path)
            return EvalResult(EvalStatus.NO_NEW_CHECKPOINT), []
        reason = checkpoints.incomplete_reason(path) if check_complete else None
        if reason:
            self._warnings.warning(
                "Checkpoint %s is still being written (%s); waiting for it.", path, reason)
            status = (EvalStatus.NO_NEW_CHECKPOINT if self.previous_checkpoint_path
                      else EvalStatus.MISSING_CHECKPOINT)
            return EvalResult(status), []
        metrics = self._target.evaluate(path)
        result = EvalResult(EvalStatus.EVALUATED, metrics=metrics, checkpoint_path=path)
        step = result.global_step
        assert step is not None, "an EVALUATED result has a global_step (EvalResult checks)"
        final = is_final or bool(
            self._max_training_steps and step >= self._max_training_steps)
        exports = self.export(result, final)
        self._warnings.reset()
        self.previous_checkpoint_path = path
        self.last_result, self.last_export_results = result, exports
        return result, exports

    def _export_with(self, exporters: Sequence[Any], result: EvalResult,
                     is_the_final_export: bool) -> list:
        base = self._export_dir or os.path.join(str(self._target.model_dir), "export")
        results = []
        for exporter in exporters:
            path = os.path.join(base, exporter.name)
            export = (functools.partial(export_staged, exporter)
                      if needs_staging(exporter, path) else exporter.export)
            results.append(export(
                estimator=self._target.export_subject, export_path=path,
                checkpoint_path=result.checkpoint_path, eval_result=result.metrics,
                is_the_final_export=is_the_final_export))
        return results

    def export(self, result: EvalResult, is_the_final_export: bool) -> list:
        """Runs every exporter on an evaluated result; returns their results."""
        exports = self._export_with(self._exporters, result, is_the_final_export)
        if is_the_final_export:
            self.is_final_export_triggered = True
            logger.info("Final export done for %s", result.checkpoint_path)
        if is_the_final_export or self.last_result is result:
            self.last_export_results = exports
        return exports

    def export_final(self, result: EvalResult) -> list:
        """The final export of a result already exported as not final.

        Only exporters that declined it then (returned None, as a final-only
        exporter does) are called again; the others keep their export, so a
        "latest" exporter does not write the same checkpoint twice.
        """
        previous = list(self.last_export_results) if self.last_result is result else []
        if len(previous) != len(self._exporters):
            previous = [None] * len(self._exporters)
        declined = [e for e, before in zip(self._exporters, previous) if before is None]
        fresh = iter(self._export_with(declined, result, True))
        exports = [before if before is not None else next(fresh) for before in previous]
        self.is_final_export_triggered = True
        self.last_export_results = exports
        logger.info("Final export done for %s", result.checkpoint_path)
        return exports
