"""What the evaluation engine needs from a model, and how a checkpoint can fail it.

`EvaluationTarget` is the small protocol between the framework-neutral engine
and a framework (`trainexec.estimator_trainer.target.EstimatorTarget`,
`trainexec.keras.evaluate.target.KerasTarget`). A target raises
`CorruptCheckpointError` for a checkpoint that will never load and
`CheckpointDisappearedError` for one deleted from under it.

Example:
    ```python
    class MyTarget:
        model_dir = "/m"
        export_subject = None
        def latest_checkpoint(self): ...
        def evaluate(self, checkpoint_path): return {"loss": 0.1, GLOBAL_STEP: 10}
        def close(self): ...
    ```
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Protocol, TypeVar

from trainexec.records import checkpoints
from trainexec.clock import Clock

__all__ = ["GLOBAL_STEP", "CheckpointDisappearedError", "CorruptCheckpointError",
           "EvaluationTarget", "describe_error", "load_or_classify"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

GLOBAL_STEP = "global_step"


# Lines of a TensorFlow error message around its point: where the op was
# defined, and the traceback (indented lines are skipped too).
_ERROR_NOISE = ("Graph execution error", "Detected at node", "Node:", "Original stack trace",
                "File \"", "Traceback")


def describe_error(error: BaseException) -> str:
    """`Type: the line that says what went wrong`, for one-line logs.

    A TensorFlow op error starts with "Graph execution error:" and where the op
    was defined; the line after that says what happened
    ("/data/eval.tfrecord; No such file or directory").
    """
    lines = [line.rstrip() for line in str(error).splitlines() if line.strip()]
    telling = [line for line in lines
               if not line[0].isspace() and not line.startswith(_ERROR_NOISE)]
    chosen = telling or lines
    return f"{type(error).__name__}: {chosen[0] if chosen else ''}"


class CorruptCheckpointError(Exception):
    """Raised by a target when a complete-looking checkpoint cannot be loaded
    (its files are all there, and still do not load after a retry)."""


class CheckpointDisappearedError(Exception):
    """Raised by a target when the checkpoint's files are gone: the trainer
    deleted it (`keep_checkpoint_max` rotation) after the loop found it."""


class EvaluationTarget(Protocol):
    """What the evaluation engine needs from a model.

    `evaluate` raises `CorruptCheckpointError` for a checkpoint that will never
    load and `CheckpointDisappearedError` for one deleted from under it; the
    loop skips the first and moves on to a newer checkpoint after the second.
    Any other error is not the checkpoint's and ends the loop.
    """

    @property
    def model_dir(self) -> str:
        """Directory whose `export/` sub-directory receives exports."""

    @property
    def export_subject(self) -> Any:
        """The object exporters receive as their `estimator` argument."""

    def latest_checkpoint(self) -> str | None:
        """The newest checkpoint prefix, or None."""

    def evaluate(self, checkpoint_path: str) -> dict[str, Any]:
        """Evaluates one checkpoint; the metrics include `global_step`.

        Raises CorruptCheckpointError or CheckpointDisappearedError (above).
        """

    def close(self) -> None:
        """Releases what evaluating holds (an Estimator's session, say); called once,
        when the evaluator's role ends (`trainexec.tasks.roles`). Nothing to release:
        do nothing."""


def load_or_classify(load: Callable[[], T], path: str,
                     damage_of: Callable[[BaseException], str | None], *,
                     clock: Clock, retry_secs: float, verb: str) -> T:
    """`load()` (a restore or an evaluation of checkpoint `path`), with its
    failures sorted out the same way for every target:

    * the checkpoint's files are gone (the trainer rotated it out), whatever
      the error: `CheckpointDisappearedError`;
    * `damage_of(error)` blames the checkpoint (returns what is wrong with it):
      retried once after `retry_secs` (a file system may lag), then
      `CorruptCheckpointError`;
    * any other error (`damage_of` returns None) is not the checkpoint's: raised.

    `verb` names the attempt in messages ("evaluate", "restore").
    """
    for attempt in (1, 2):
        try:
            return load()
        except Exception as err:  # sorted out by the checkpoint's files, else raised
            if checkpoints.disappeared(path):
                raise CheckpointDisappearedError(
                    f"{path} is gone: {describe_error(err)}") from err
            damage = damage_of(err)
            if damage is None:
                raise
            error = err
        if attempt == 1:
            logger.warning("Could not %s %s (%s; %s); retrying in %ss", verb, path,
                           describe_error(error), damage, retry_secs)
            clock.sleep(retry_secs)
    raise CorruptCheckpointError(
        f"{verb} failed twice, {retry_secs:g}s apart: {damage} "
        f"({describe_error(error)})") from error
