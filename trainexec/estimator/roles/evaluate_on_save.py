"""Evaluation inside training (local and master roles), on checkpoint saves."""

from __future__ import annotations

import logging

import tensorflow as tf

from trainexec.clock import Clock
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.evaluation.one_pass import EvalResult, EvalStatus, Evaluator
from trainexec.estimator.roles.context import TaskContext

__all__ = ["EvaluateOnSaveListener", "evaluate_on_save"]


def evaluate_on_save(ctx: TaskContext,
                     listener: ContinuousEvalListener) -> "EvaluateOnSaveListener":
    """The saving listener that evaluates `ctx`'s checkpoints during its training."""
    eval_spec = ctx.require_eval_spec()
    # Finality is decided by the end of training, not by max_steps: with
    # asynchronous workers the last save can land past max_steps.
    evaluator = Evaluator(ctx.eval_target(), eval_spec.exporters, None, ctx.clock)
    return EvaluateOnSaveListener(evaluator, eval_spec.throttle_secs, listener, ctx.clock,
                                  ctx.train_spec.max_steps)

logger = logging.getLogger(__name__)


class EvaluateOnSaveListener(tf.compat.v1.train.CheckpointSaverListener):
    """Evaluates after checkpoint saves, at most once per `throttle_secs`.

    The save made when the session is created is skipped (nothing is trained
    yet), and so is a save at or past `max_steps` (training is about to end).
    The last checkpoint is always evaluated when training ends, once, and only
    then do exporters get `is_the_final_export=True`.
    """

    def __init__(self, evaluator: Evaluator, throttle_secs: float,
                 listener: ContinuousEvalListener, clock: Clock,
                 max_steps: int | None = None) -> None:
        self._evaluator = evaluator
        self._max_steps = max_steps
        self._throttle_secs = throttle_secs
        self._listener = listener
        self._clock = clock
        self.eval_result: EvalResult | None = None
        self.export_results: list | None = None

    def begin(self) -> None:
        self._is_first_save = True
        self._last_eval_at: float | None = None
        self._last_eval_step: int | None = None

    def after_save(self, session, global_step_value):
        del session
        if self._is_first_save:
            self._is_first_save = False
            return None
        if self._max_steps and global_step_value >= self._max_steps:
            return None  # the last save: `end` evaluates it as the final one
        if not self._listener.before_eval():
            logger.info("Exiting training and evaluation loop, as requested by "
                        "ContinuousEvalListener.before_eval.")
            return True
        now = self._clock.now()
        if self._last_eval_at is not None and now - self._last_eval_at < self._throttle_secs:
            logger.info("Skip the evaluation of step %s: throttle_secs is %s.",
                        global_step_value, self._throttle_secs)
            return None
        self._evaluate(global_step_value, is_final=False)
        if not self._listener.after_eval(self.eval_result):
            logger.info("Exiting evaluation, as requested by "
                        "ContinuousEvalListener.after_eval.")
            return True
        return None

    def end(self, session, global_step_value):
        del session
        if global_step_value != self._last_eval_step:
            if self._listener.before_eval():
                self._evaluate(global_step_value, is_final=True)
                self._listener.after_eval(self.eval_result)
        elif self.eval_result is not None and not self._evaluator.is_final_export_triggered:
            # The last save was evaluated mid-training, before anyone knew it was
            # the last: exporters that declined it then get the final export.
            self.export_results = self._evaluator.export_final(self.eval_result)

    def _evaluate(self, global_step_value: int, is_final: bool) -> None:
        self._last_eval_at = self._clock.now()
        self._last_eval_step = global_step_value
        result, exports = self._evaluator.evaluate_and_export(is_final=is_final)
        if result.status != EvalStatus.EVALUATED:
            raise RuntimeError(
                "There was no new checkpoint after the training. "
                f"Eval status: {result.status}")
        self.eval_result, self.export_results = result, exports
