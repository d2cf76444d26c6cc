"""Keras callbacks for runs that trainexec's evaluators follow.

`TrainingCompleteCallback` records, in the checkpoint directory, that
`model.fit` finished, so a `SidecarEvaluator` stops by itself after the last
checkpoint.
"""

from __future__ import annotations

import os

import tensorflow as tf

from trainexec.records.checkpoints import latest_keras_checkpoint
from trainexec.records.completion import clear_training_complete, record_training_complete

__all__ = ["TrainingCompleteCallback"]


class TrainingCompleteCallback(tf.keras.callbacks.Callback):
    """Records in `checkpoint_dir` that `model.fit` finished, for evaluators to stop.

    On `on_train_begin` it clears an earlier run's record; on `on_train_end` it
    records the latest checkpoint (a `.weights.h5` / `.keras` file or a
    TensorFlow checkpoint) and the optimizer `iterations`. Only the task
    that writes checkpoints (the chief) records. Put it after `ModelCheckpoint`.

    Example:
        ```python
        model.fit(data, epochs=10, callbacks=[
            tf.keras.callbacks.ModelCheckpoint(
                os.path.join(checkpoint_dir, "ckpt-{epoch}.weights.h5"),
                save_weights_only=True),
            TrainingCompleteCallback(checkpoint_dir)])
        ```
    """

    def __init__(self, checkpoint_dir: str | os.PathLike[str]) -> None:
        super().__init__()
        self.checkpoint_dir = os.fspath(checkpoint_dir)

    def _is_chief(self) -> bool:
        return bool(self.model.distribute_strategy.extended.should_checkpoint)

    def on_train_begin(self, logs=None):
        if self._is_chief():
            clear_training_complete(self.checkpoint_dir)

    def on_train_end(self, logs=None):
        if not self._is_chief():
            return
        optimizer = getattr(self.model, "optimizer", None)
        step = int(optimizer.iterations.numpy()) if optimizer is not None else None
        latest = latest_keras_checkpoint(self.checkpoint_dir)
        record_training_complete(self.checkpoint_dir, latest.path if latest else None,
                                 step, None)
