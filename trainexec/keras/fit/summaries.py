"""Training summaries of a Keras run for TensorBoard, laid out as an Estimator's.

`TrainingSummaries` is a progress sink (`trainexec.keras.fit.progress`): at each
progress report of the chief (or a local run) it writes the loss and the
compiled metrics, `steps_per_sec` and, when the optimizer follows a schedule,
`learning_rate`, as TensorBoard scalars at the training step, directly under
`model_dir`. The evaluator writes its metrics under `model_dir/eval`
(`trainexec.evaluation.summaries`), so `tensorboard --logdir model_dir` shows
both curves under the same tags. It uses a writer of its own and records
whatever `tf.summary.record_if` a user's `tf.keras.callbacks.TensorBoard`
has set, so that callback keeps working beside it. Whoever creates one closes
it (`close()`) when training ends, releasing its event file.

Example:
    ```python
    summaries = TrainingSummaries(model_dir)
    tracker = ProgressTracker(max_steps, 100, sinks=[log_progress, summaries])
    try:
        ...  # train, with progress_callback(tracker)
    finally:
        summaries.close()
    ```
"""

from __future__ import annotations

import logging
import os
from typing import Any

from trainexec.keras.fit.progress import Progress

__all__ = ["TrainingSummaries"]

logger = logging.getLogger(__name__)


class TrainingSummaries:
    """Writes a `Progress` as TensorBoard scalars under `log_dir`."""

    def __init__(self, log_dir: str | os.PathLike) -> None:
        self.log_dir = os.fspath(log_dir)
        self._writer: Any = None

    def __call__(self, progress: Progress) -> None:
        import tensorflow as tf

        if self._writer is None:
            self._writer = tf.summary.create_file_writer(self.log_dir)
        scalars = dict(progress.metrics)
        if progress.steps_per_sec is not None:
            scalars["steps_per_sec"] = progress.steps_per_sec
        if progress.learning_rate is not None:
            scalars["learning_rate"] = progress.learning_rate
        with self._writer.as_default(), tf.summary.record_if(True):
            for name, value in scalars.items():
                tf.summary.scalar(name, value, step=progress.step)
        self._writer.flush()

    def close(self) -> None:
        """Flushes and closes the event file; a later report opens a new one."""
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:  # as a failing sink: never stops training
                logger.warning("Could not close the training summaries under %s",
                               self.log_dir, exc_info=True)
