"""The evaluator's status record for `trainexec launch`: its last evaluation, its exports.

Under `trainexec launch` (`TRAINEXEC_LAUNCH_DIR` set) the evaluator task replaces
its status record (`trainexec.contract.task_status`) after each evaluation with the
checkpoint's step and metrics, and once it stops with its final metrics and
export paths, so the launcher's live view and closing summary can show them.
A framework-neutral `ContinuousEvalListener`: both trainers' evaluators use it.

Example:
    ```python
    status = EvaluationStatus.from_env("evaluator:0", model_dir)   # None: no launcher
    listener = ListenerList([listener, status])
    ...
    status.report_final(metrics, export_results)
    ```
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from trainexec.clock import Clock
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.evaluation.one_pass import EvalResult, EvalStatus
from trainexec.evaluation.target import GLOBAL_STEP
from trainexec.contract.task_status import EVALUATION, StatusReporter

__all__ = ["EvaluationStatus", "plain_metrics"]


def plain_metrics(metrics: Mapping[str, Any] | None) -> dict[str, float]:
    """The scalar metrics as floats (JSON-ready); `global_step` left out."""
    plain: dict[str, float] = {}
    for name, value in (metrics or {}).items():
        if name == GLOBAL_STEP:
            continue
        try:
            plain[str(name)] = float(value)
        except (TypeError, ValueError):
            continue
    return plain


def _path(export: Any) -> str | None:
    if export is None:
        return None
    if isinstance(export, bytes):
        return export.decode()
    return os.fspath(export) if isinstance(export, (str, os.PathLike)) else str(export)


class EvaluationStatus(ContinuousEvalListener):
    """Reports each evaluation, then the final result, to the launcher."""

    def __init__(self, reporter: StatusReporter, model_dir: str) -> None:
        self.reporter = reporter
        self.model_dir = str(model_dir)

    @classmethod
    def from_env(cls, task_name: str, model_dir: str, clock: Clock | None = None
                  ) -> "EvaluationStatus | None":
        reporter = StatusReporter.from_env(task_name, clock=clock)
        return cls(reporter, model_dir) if reporter is not None else None

    def after_eval(self, eval_result: EvalResult) -> bool:
        if eval_result.status == EvalStatus.EVALUATED:
            self.reporter.report(EVALUATION, {
                "step": eval_result.global_step, "metrics": plain_metrics(eval_result.metrics),
                "model_dir": self.model_dir})
        return True

    def report_final(self, metrics: Mapping[str, Any] | None, exports: Sequence[Any]) -> None:
        if not metrics:
            return
        step = metrics.get(GLOBAL_STEP)
        self.reporter.report(EVALUATION, {
            "step": int(step) if step is not None else None,
            "metrics": plain_metrics(metrics), "model_dir": self.model_dir, "final": True,
            "exports": [p for p in (_path(e) for e in exports or []) if p]})
