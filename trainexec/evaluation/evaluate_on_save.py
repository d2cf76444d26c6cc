"""Evaluation inside training, after the trainer's own checkpoint saves.

What a local run (and an Estimator master) does between training steps, for
every trainer: the trainer calls `EvaluateOnSave.after_save` after each
checkpoint save and `EvaluateOnSave.finish` once training has returned. The
Estimator calls them from a `CheckpointSaverListener`
(`trainexec.estimator_trainer.evaluate_on_save`), the KerasTrainer after each
`model.fit` save (`trainexec.keras.trainer`), each on its own
`EvaluationTarget`. The rules:

* after a save: a save at or past `max_steps` is left to `finish` (training is
  about to end); the listener's `before_eval` returning False stops training;
  an evaluation less than `throttle_secs` after the last one is skipped; else
  the checkpoint is evaluated and exported (`is_the_final_export=False`), and
  the listener's `after_eval` returning False stops training;
* when training ends: the last checkpoint is evaluated once more as the final
  one (`is_the_final_export=True`) unless it was the last one evaluated; then
  only the exporters that declined it then get the final export.

Finality is decided by the end of training, not by max_steps: with
asynchronous workers the last save can land past max_steps. Each trainer keeps
the words of its own log lines (`OnSaveWording`).

Example:
    ```python
    on_save = EvaluateOnSave(target, eval_spec, max_steps=1000, listener=listener,
                             clock=clock, wording=wording)
    keep_training = on_save.after_save(step, checkpoint_path)   # after each save
    on_save.finish(last_step, last_checkpoint_path)              # after training
    metrics, exports = on_save.eval_result.metrics, on_save.export_results
    ```
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable

from trainexec.clock import Clock
from trainexec.evaluation.final_export import FinalExportSettler
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.evaluation.one_pass import EvalResult, EvalStatus, Evaluator
from trainexec.evaluation.target import EvaluationTarget
from trainexec.specs import EvalSpec

__all__ = ["EvaluateOnSave", "OnSaveWording", "evaluate_here"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class OnSaveWording:
    """The words of an `EvaluateOnSave`'s log lines and error, per trainer.

    Attributes:
      stopped_before_eval: logged when `before_eval` stops training.
      stopped_after_eval: logged when `after_eval` stops training.
      throttled: logged for a save not evaluated because of `throttle_secs`;
        `%s` arguments: the step, throttle_secs.
      not_evaluated: the RuntimeError's message when a save's checkpoint could
        not be evaluated; `str.format` fields: `path` (None: the latest),
        `status`.
      evaluated: logged after each evaluation (None: nothing); `%s`
        arguments: the checkpoint, its step, its metrics.
    """

    stopped_before_eval: str
    stopped_after_eval: str
    throttled: str
    not_evaluated: str
    evaluated: str | None = None


def evaluate_here(evaluate: Callable[[], Any]) -> Any:
    """Runs an evaluation after a save on the calling (training) thread."""
    return evaluate()


def _metrics_text(metrics: dict) -> str:
    return ", ".join(f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}"
                     for k, v in sorted(metrics.items()))


class EvaluateOnSave:
    """Evaluates a training task's own checkpoint saves (see the module doc).

    Args:
      target: what evaluates a checkpoint.
      eval_spec: its exporters and `throttle_secs`.
      max_steps: the training's max_steps (None: until its data ends).
      listener: asked before and after each evaluation.
      clock: for `throttle_secs`.
      wording: the log lines' words.
      run_evaluation: calls the evaluation it is given (default: on this
        thread); the KerasTrainer runs it off the training thread.

    `eval_result` and `export_results` hold the last evaluation's result and
    exports (None before the first).
    """

    def __init__(self, target: EvaluationTarget, eval_spec: EvalSpec, max_steps: int | None,
                 listener: ContinuousEvalListener, clock: Clock, wording: OnSaveWording,
                 run_evaluation: Callable[[Callable[[], Any]], Any] = evaluate_here) -> None:
        self._evaluator = Evaluator(target, eval_spec.exporters, None, clock)
        self._throttle_secs = eval_spec.throttle_secs
        self._max_steps = max_steps
        self._listener = listener
        self._clock = clock
        self._wording = wording
        self._run_evaluation = run_evaluation
        self.eval_result: EvalResult | None = None
        self.export_results: list | None = None
        self.begin()

    def begin(self) -> None:
        """Starts a training session: no evaluation is recent yet."""
        self._last_eval_at: float | None = None
        self._last_eval_step: int | None = None

    def after_save(self, step: int, checkpoint_path: str | None = None) -> bool:
        """After the save at `step`; returns whether training goes on.

        `checkpoint_path` is the checkpoint just saved, complete; None
        evaluates the target's latest complete checkpoint.
        """
        if self._max_steps and step >= self._max_steps:
            return True  # the last save: `finish` evaluates it as the final one
        if not self._listener.before_eval():
            logger.info(self._wording.stopped_before_eval)
            return False
        now = self._clock.now()
        if self._last_eval_at is not None and now - self._last_eval_at < self._throttle_secs:
            logger.info(self._wording.throttled, step, self._throttle_secs)
            return True
        result = self._evaluate(step, checkpoint_path, is_final=False)
        if not self._listener.after_eval(result):
            logger.info(self._wording.stopped_after_eval)
            return False
        return True

    def finish(self, step: int, checkpoint_path: str | None = None) -> None:
        """Once training has returned at `step`: the final evaluation and export."""
        if step != self._last_eval_step:
            if self._listener.before_eval():
                self._listener.after_eval(
                    self._evaluate(step, checkpoint_path, is_final=True))
        elif self.eval_result is not None:
            # The last save was evaluated mid-training, before anyone knew it was
            # the last: exporters that declined it then get the final export.
            self.export_results = FinalExportSettler(self._evaluator).run_over()

    def _evaluate(self, step: int, checkpoint_path: str | None, is_final: bool) -> EvalResult:
        """Evaluates and exports; the result (also `eval_result`), always EVALUATED."""
        self._last_eval_at = self._clock.now()
        self._last_eval_step = step
        result, exports = self._run_evaluation(lambda: self._evaluator.evaluate_and_export(
            checkpoint_path, is_final=is_final, check_complete=checkpoint_path is None))
        if result.status != EvalStatus.EVALUATED:
            raise RuntimeError(self._wording.not_evaluated.format(
                path=checkpoint_path or result.checkpoint_path
                or f"the latest checkpoint after step {step}", status=result.status))
        if self._wording.evaluated:
            logger.info(self._wording.evaluated, result.checkpoint_path, result.global_step,
                        _metrics_text(result.metrics))
        self.eval_result, self.export_results = result, exports
        return result
