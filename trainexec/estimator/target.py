"""`EstimatorTarget`: an Estimator's checkpoints as the evaluation engine's target.

Example::

    target = EstimatorTarget(estimator, eval_spec)
    metrics = target.evaluate(target.latest_checkpoint())
"""

from __future__ import annotations

import logging
from typing import Any

from trainexec import checkpoints
from trainexec.clock import Clock, SystemClock
from trainexec.estimator.availability import TrainableModel
from trainexec.evaluation.target import (CheckpointDisappearedError, CorruptCheckpointError,
                                         describe_error)

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

    With `persistent` (the default, unless `TRAINEXEC_PERSISTENT_EVAL=0`) a
    real Estimator is evaluated through one evaluation graph and session built
    on first use (`trainexec.estimator.persistent_eval.PersistentEvaluation`): the same
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
        return self._estimator.latest_checkpoint()

    def evaluate(self, checkpoint_path: str) -> dict:
        for attempt in (1, 2):
            try:
                return self._evaluate(checkpoint_path)
            except Exception as err:  # sorted out by the checkpoint's files, else raised
                damage = _checkpoint_damage(checkpoint_path, err)
                if damage is None:
                    raise
                error = err
            if attempt == 1:
                logger.warning("Could not evaluate %s (%s; %s); retrying in %ss",
                               checkpoint_path, describe_error(error), damage,
                               self._retry_secs)
                self._clock.sleep(self._retry_secs)
        raise CorruptCheckpointError(
            f"evaluating failed twice, {self._retry_secs:g}s apart: {damage} "
            f"({describe_error(error)})") from error

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
            from trainexec.estimator import persistent_eval as estimator_eval

            wanted = self._persistent_wanted
            if wanted is None:
                wanted = estimator_eval.persistent_enabled()
            if not wanted:
                self._fall_back("the persistent evaluation graph is turned off "
                                f"({estimator_eval.ENV_VAR}=0 or persistent=False)",
                                logging.INFO)
                return False
            try:
                self._persistent = estimator_eval.PersistentEvaluation(
                    self._estimator, self._eval_spec)
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
            from trainexec.estimator.persistent_eval import NotServable

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
    nothing is (the error is not the checkpoint's). Raises
    CheckpointDisappearedError when its files are gone."""
    import tensorflow as tf

    if checkpoints.disappeared(path):
        raise CheckpointDisappearedError(f"{path} is gone: {describe_error(error)}") from error
    if not isinstance(error, tf.errors.OpError) or isinstance(error, tf.errors.NotFoundError):
        return None  # a missing file that is not the checkpoint's: the user's to fix
    return checkpoints.data_damage(path)
