"""Evaluation summaries for TensorBoard: each evaluation's metrics at its training step.

`EvalSummaries` is a `ContinuousEvalListener` writing every evaluated
checkpoint's metrics as TensorBoard scalars at the checkpoint's training step
(`global_step`), under the directory it is given. `KerasTrainer` puts it on its
evaluator (and its local runs) with `eval_summary_dir(model_dir, name)`:
`<model_dir>/eval` (`eval_<EvalSpec.name>` for a named evaluation), the
Estimator's layout, so `tensorboard --logdir <model_dir>` shows the training
and evaluation curves side by side under the same tags. The Estimator writes
its own and is not given one. A `SidecarEvaluator` takes it in `listeners`. Whoever
creates one closes it (`close()`) when the evaluations end, releasing its
event file.

Example:
    ```python
    summaries = EvalSummaries(os.path.join(ckpt_dir, "eval"))
    try:
        SidecarEvaluator(model, data, ckpt_dir, listeners=[summaries]).start()
    finally:
        summaries.close()
    ```
"""

from __future__ import annotations

import logging
import os
from typing import Any

from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.evaluation.one_pass import EvalResult, EvalStatus
from trainexec.evaluation.status_report import plain_metrics

__all__ = ["EvalSummaries", "eval_summary_dir"]

logger = logging.getLogger(__name__)


def eval_summary_dir(model_dir: str, name: str | None = None) -> str:
    """`<model_dir>/eval`, or `<model_dir>/eval_<name>` for a named evaluation."""
    return os.path.join(str(model_dir), f"eval_{name}" if name else "eval")


class EvalSummaries(ContinuousEvalListener):
    """Writes each evaluation's scalar metrics under `log_dir` at its step."""

    def __init__(self, log_dir: str | os.PathLike) -> None:
        self.log_dir = os.fspath(log_dir)
        self._writer: Any = None

    def after_eval(self, eval_result: EvalResult) -> bool:
        if eval_result.status != EvalStatus.EVALUATED:
            return True
        import tensorflow as tf  # loaded by then: something evaluated a model

        try:
            if self._writer is None:
                self._writer = tf.summary.create_file_writer(self.log_dir)
            with self._writer.as_default(), tf.summary.record_if(True):
                for name, value in plain_metrics(eval_result.metrics).items():
                    tf.summary.scalar(name, value, step=eval_result.global_step)
            self._writer.flush()
        except Exception:  # summaries must never stop an evaluation
            logger.warning("Could not write the evaluation summaries under %s",
                           self.log_dir, exc_info=True)
        return True

    def close(self) -> None:
        """Flushes and closes the event file; a later evaluation opens a new one."""
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:  # as writing: never stops the evaluator
                logger.warning("Could not close the evaluation summaries under %s",
                               self.log_dir, exc_info=True)
