"""The Estimator's evaluation inside training (local and master roles): a
`CheckpointSaverListener` that hands each save to
`trainexec.evaluation.evaluate_on_save`, and tf.estimator's log lines for it.

The final evaluation, once `estimator.train` has returned, is the role sequence's
(`trainexec.tasks.training`): the listener records the step training ended at."""

from __future__ import annotations

import tensorflow as tf

from trainexec.evaluation.evaluate_on_save import EvaluateOnSave, OnSaveWording
from trainexec.evaluation.one_pass import EvalResult

__all__ = ["ESTIMATOR_WORDING", "EvaluateOnSaveListener"]

# The lines tf.estimator.train_and_evaluate logs.
ESTIMATOR_WORDING = OnSaveWording(
    stopped_before_eval="Exiting training and evaluation loop, as requested by "
                        "ContinuousEvalListener.before_eval.",
    stopped_after_eval="Exiting evaluation, as requested by "
                       "ContinuousEvalListener.after_eval.",
    throttled="Skip the evaluation of step %s: throttle_secs is %s.",
    not_evaluated="There was no new checkpoint after the training. Eval status: {status}")


class EvaluateOnSaveListener(tf.compat.v1.train.CheckpointSaverListener):
    """Evaluates after checkpoint saves, at most once per `throttle_secs`
    (`EvaluateOnSave`); the save made when the session is created is skipped
    (nothing is trained yet). `ended_at_step`: the step of the save that ended
    training (None while it has not ended, or if training did not run)."""

    def __init__(self, on_save: EvaluateOnSave) -> None:
        self._on_save = on_save
        self.ended_at_step: int | None = None

    @property
    def eval_result(self) -> EvalResult | None:
        return self._on_save.eval_result

    @property
    def export_results(self) -> list | None:
        return self._on_save.export_results

    def begin(self) -> None:
        self._is_first_save = True
        self._on_save.begin()

    def after_save(self, session, global_step_value):
        del session
        if self._is_first_save:
            self._is_first_save = False
            return None
        return None if self._on_save.after_save(global_step_value) else True

    def end(self, session, global_step_value):
        del session
        self.ended_at_step = int(global_step_value)
