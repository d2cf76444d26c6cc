"""`EstimatorTarget`: an Estimator's checkpoints as the evaluation engine's target.

Example:
    ```python
    target = EstimatorTarget(estimator, eval_spec)
    metrics = target.evaluate(target.latest_checkpoint())
    ```
"""

from __future__ import annotations

import logging
from typing import Any

from trainexec.records import checkpoints
from trainexec.clock import Clock, SystemClock
from trainexec.estimator_trainer.availability import TrainableModel
from trainexec.evaluation.target import describe_error, load_or_classify

__all__ = ["EstimatorTarget"]

logger = logging.getLogger(__name__)

class EstimatorTarget:
    """Evaluates an Estimator's checkpoints as an `EvalSpec` says.

    `estimator.evaluate` failing on a checkpoint is sorted out by the
    checkpoint's files: gone (the chief's `keep_checkpoint_max` rotated it
    out) -> `CheckpointDisappearedError`, whatever the error (typically
    "ValueError: The passed save_path is not a valid checkpoint"); there but
    some tensor does not read (a data shard cut short: OutOfRangeError, damaged:
    DataLossError) -> retried once after `retry_secs`, then
    `CorruptCheckpointError`. Any other error, a `NotFoundError` for a wrong
    eval input path among them, is raised as it is.

    With `persistent` (the default, unless `TRAINEXEC_PERSISTENT_EVAL=0`) an
    Estimator is evaluated through one evaluation graph and session built on first
    use (trainexec's own Estimator: its public `persistent_evaluation`; tf.estimator's:
    `trainexec.estimator_trainer.persistent_eval.PersistentEvaluation`): the same
    metrics and summaries, without a graph and a session per checkpoint. What
    that path cannot serve exactly goes to `estimator.evaluate`, with one log
    line saying why.
    """

    def __init__(self, estimator: TrainableModel, eval_spec: Any,
                 clock: Clock | None = None, retry_secs: float = 1.0,
                 persistent: bool | None = None) -> None:
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._clock = clock or SystemClock()
        self._retry_secs = retry_secs
        self._persistent_wanted = persistent
        # None: not built yet; False: estimator.evaluate from now on.
        self._persistent: Any = None

    @property
    def model_dir(self) -> str:
        return self._estimator.model_dir

    @property
    def export_subject(self) -> Any:
        return self._estimator

    def latest_checkpoint(self) -> str | None:
        latest = checkpoints.latest_checkpoint(self.model_dir)
        return latest.path if latest else None

    def evaluate(self, checkpoint_path: str) -> dict:
        return load_or_classify(lambda: self._evaluate(checkpoint_path), checkpoint_path,
                                lambda error: _checkpoint_damage(checkpoint_path, error),
                                clock=self._clock, retry_secs=self._retry_secs,
                                verb="evaluate")

    @property
    def persistent(self) -> bool:
        """Whether evaluations go through the persistent graph (so far)."""
        return bool(self._persistent)

    def close(self) -> None:
        """Releases the persistent evaluation's session, if any."""
        if self._persistent:
            self._persistent.close()
        self._persistent = False

    def _persistent_evaluation(self) -> Any:
        """The persistent evaluation, built on first use; False to fall back."""
        if self._persistent is None:
            from trainexec.estimator_trainer import persistent_eval as estimator_eval

            wanted = self._persistent_wanted
            if wanted is None:
                wanted = estimator_eval.persistent_enabled()
            if not wanted:
                self._fall_back("the persistent evaluation graph is turned off "
                                f"({estimator_eval.ENV_VAR}=0 or persistent=False)",
                                logging.INFO)
                return False
            spec = self._eval_spec
            try:
                if hasattr(self._estimator, "persistent_evaluation"):  # trainexec's own
                    self._persistent = self._estimator.persistent_evaluation(
                        spec.input_fn, steps=spec.steps, hooks=spec.hooks, name=spec.name)
                else:
                    self._persistent = estimator_eval.PersistentEvaluation(
                        self._estimator, spec)
            except estimator_eval.NotServable as why:
                self._fall_back(str(why))
            except Exception as err:  # estimator.evaluate will say it as it does
                self._fall_back(f"building its graph failed: {describe_error(err)}")
        return self._persistent

    def _fall_back(self, why: str, level: int = logging.WARNING) -> None:
        if self._persistent:
            self._persistent.close()
        self._persistent = False
        logger.log(level, "Evaluating %s with estimator.evaluate, a new graph and session per "
                    "checkpoint: %s", self.model_dir, why)

    def _evaluate(self, checkpoint_path: str) -> dict:
        persistent = self._persistent_evaluation()
        if persistent:
            from trainexec.estimator_trainer.persistent_eval import NotServable

            try:
                return persistent.evaluate(checkpoint_path)
            except NotServable as why:
                self._fall_back(str(why))
        return self._estimator.evaluate(
            input_fn=self._eval_spec.input_fn, steps=self._eval_spec.steps,
            name=self._eval_spec.name, checkpoint_path=checkpoint_path,
            hooks=self._eval_spec.hooks)


def _checkpoint_damage(path: str, error: BaseException) -> str | None:
    """What is wrong with the checkpoint that `error` came from, or None when
    nothing is (the error is not the checkpoint's)."""
    import tensorflow as tf

    if not isinstance(error, tf.errors.OpError) or isinstance(error, tf.errors.NotFoundError):
        return None  # a missing file that is not the checkpoint's: the user's to fix
    return checkpoints.data_damage(path)
