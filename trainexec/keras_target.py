"""Restoring Keras and custom-loop checkpoints into a model, and evaluating them.

`KerasTarget` is the evaluation engine's `EvaluationTarget` for Keras: it loads a
checkpoint written by `tf.train.CheckpointManager` (a `model` attribute) or by
`ModelCheckpoint(save_weights_only=True)` into the model, restores the optimizer
`iterations` (the training step callbacks see), and runs `model.evaluate`.

Example::

    target = KerasTarget(model, dataset, "/ckpts")
    metrics = target.evaluate(target.latest_checkpoint())   # includes global_step
"""

from __future__ import annotations

import logging
import re
from typing import Any, Sequence

import tensorflow as tf

from trainexec import checkpoints
from trainexec.clock import Clock, SystemClock
from trainexec.continuous import CorruptCheckpointError
from trainexec.evaluation import GLOBAL_STEP

__all__ = ["KerasTarget", "flatten_metrics", "read_iterations"]

logger = logging.getLogger(__name__)

# Where the optimizer step counter sits in the two checkpoint layouts: under
# `optimizer/` (CheckpointManager of model+optimizer, or weights saved by a
# compiled model) or `model/optimizer/` (a checkpoint of a compiled model only).
# Keras 2.11+ optimizers call it `_iterations`, legacy ones `iter`.
_ITERATIONS_KEY = re.compile(r"^(model/)?optimizer/(_iterations|iter)/\.ATTRIBUTES/VARIABLE_VALUE$")


def read_iterations(checkpoint_path: str) -> int | None:
    """The optimizer `iterations` saved in a checkpoint, or None if absent."""
    return _iterations_in(tf.train.load_checkpoint(checkpoint_path))


def _iterations_in(reader: Any) -> int | None:
    keys = sorted(k for k in reader.get_variable_to_shape_map() if _ITERATIONS_KEY.match(k))
    return int(reader.get_tensor(keys[0])) if keys else None


def flatten_metrics(logs: dict[str, Any]) -> dict[str, Any]:
    """Plain-Python metrics: dict-valued metrics merged in, numbers as floats."""
    import numpy as np

    flat: dict[str, Any] = {}
    for name, value in logs.items():
        items = value.items() if isinstance(value, dict) else [(name, value)]
        for key, item in items:
            array = np.asarray(item)
            flat[key] = float(array) if array.ndim == 0 else array.tolist()
    return flat


class KerasTarget:
    """An `EvaluationTarget` restoring Keras / custom-loop checkpoints into `model`.

    A checkpoint with a `model` attribute (CheckpointManager style) is read with
    `tf.train.Checkpoint(model=model)`; weights saved by `ModelCheckpoint` are
    loaded with `model.load_weights`. The optimizer `iterations` is restored so
    callbacks (TensorBoard) see the training step; a checkpoint without it is a
    `RuntimeError`. A restore that fails on a complete-looking checkpoint is
    retried once after `retry_secs`, then reported as `CorruptCheckpointError`.

    Example::

        target = KerasTarget(model, dataset, "/ckpts")
        metrics = target.evaluate(target.latest_checkpoint())
    """

    def __init__(self, model: Any, data: Any, checkpoint_dir: str, steps: int | None = None,
                 callbacks: Sequence[Any] = (), verbose: int | str = 2,
                 clock: Clock | None = None, retry_secs: float = 1.0) -> None:
        self.model = model
        self.data = data
        self.checkpoint_dir = checkpoint_dir
        self.steps = steps
        self.callbacks = list(callbacks)
        self.verbose = verbose
        self.last_duration_secs = 0.0
        self._clock = clock or SystemClock()
        self._retry_secs = retry_secs
        self._loaded: str | None = None

    @property
    def model_dir(self) -> str:
        return self.checkpoint_dir

    @property
    def export_subject(self) -> "KerasTarget":
        return self

    def latest_checkpoint(self) -> str | None:
        latest = checkpoints.latest_checkpoint(self.checkpoint_dir)
        return latest.path if latest else None

    def model_at(self, checkpoint_path: str) -> Any:
        """The model with `checkpoint_path`'s weights (restored if needed)."""
        if self._loaded != checkpoint_path:
            self._restore(checkpoint_path)
        return self.model

    def evaluate(self, checkpoint_path: str) -> dict[str, Any]:
        step = self._restore_or_skip(checkpoint_path)
        logger.info("Evaluation starts: restored %s (training step %s)",
                    checkpoint_path, step)
        started = self._clock.now()
        logs = self.model.evaluate(self.data, steps=self.steps, callbacks=self.callbacks,
                                   return_dict=True, verbose=self.verbose)
        self.last_duration_secs = self._clock.now() - started
        metrics = flatten_metrics(logs)
        metrics[GLOBAL_STEP] = step
        return metrics

    def _restore_or_skip(self, path: str) -> int:
        for attempt in (1, 2):
            try:
                return self._restore(path)
            except tf.errors.NotFoundError:
                raise  # the trainer rotated it away: the loop moves on
            except _UNREADABLE as err:
                error = err
            if attempt == 1:
                logger.warning("Could not restore %s (%s); retrying in %ss", path,
                               _describe(error), self._retry_secs)
                self._clock.sleep(self._retry_secs)
        raise CorruptCheckpointError(
            f"restoring failed twice, {self._retry_secs:g}s apart: {_describe(error)}"
        ) from error

    def _restore(self, path: str) -> int:
        self._loaded = None
        reader = tf.train.load_checkpoint(path)
        step = _iterations_in(reader)
        if step is None:
            raise RuntimeError(
                f"Checkpoint {path} has no optimizer `iterations`, which the evaluator "
                "restores so callbacks see the training step. Save the optimizer with "
                "the model: tf.train.Checkpoint(model=model, optimizer=optimizer) in a "
                "custom loop, or ModelCheckpoint(save_weights_only=True) on a compiled "
                "model.")
        if "model" in {key.split("/")[0] for key in reader.get_variable_to_shape_map()}:
            tf.train.Checkpoint(model=self.model).read(path).expect_partial()
        else:
            status = self.model.load_weights(path)
            if hasattr(status, "expect_partial"):
                status.expect_partial()
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            optimizer.iterations.assign(step)
        self._loaded = path
        return step


# What a complete-looking but damaged checkpoint raises on restore: a data file
# shorter than its index says (IndexError), a checksum mismatch (OpError).
# NotFoundError is left to the loop (the trainer rotated the checkpoint away);
# ValueError (shapes that do not match the model) is a configuration error.
_UNREADABLE = (tf.errors.OpError, IndexError)


def _describe(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}"
