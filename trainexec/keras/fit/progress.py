"""Training progress of a Keras run: one report every N steps, handed to sinks.

What an Estimator logs as it trains (`loss = ..., step = ...`, `global_step/sec`),
for `KerasTrainer`: on the chief (or a local run), every `every_steps` steps
and at `max_steps`, a `Progress` (step out of `max_steps`, the loss and the
compiled metrics as `fit` reports them, steps per second since the last
report, an estimate of the time left) goes to each sink: the log line
(`log_progress`), the TensorBoard scalars (`trainexec.keras.fit.summaries`), the
status record `trainexec launch` shows (`trainexec.contract.task_status`).

`ProgressTracker` decides when a report is due and computes it (pure, on an
injectable clock); `progress_callback` wraps it in a Keras callback (its
`on_train_batch_end` / `on_train_begin`), so it works in any loop that drives
standard Keras callbacks. The step is read from the optimizer only when a
report is due (other batches cost a comparison), and is never less than the
batches run (under ParameterServerStrategy the optimizer can lag them).

Example:
    ```python
    tracker = ProgressTracker(max_steps=600, every_steps=100, sinks=[log_progress])
    model.fit(data, steps_per_epoch=100, epochs=6,
              callbacks=[progress_callback(tracker)])
    # INFO trainexec.keras.fit.progress: step 100/600: loss = 0.4121, accuracy = 0.8750
    #     (41.3 steps/s, 12s left)
    ```
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Iterable, Mapping

from trainexec.clock import Clock, SystemClock
from trainexec.formatting import format_rate, format_secs
from trainexec.keras.compat.fit_loop import mark_takes_tf_logs
from trainexec.keras.compat.optimizers import learning_rate_schedule
from trainexec.keras.fit.log_values import log_values

__all__ = ["Progress", "ProgressTracker", "describe_progress", "log_progress",
           "progress_callback", "replicas_summed", "scalar_logs"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Progress:
    """One progress report.

    Attributes:
      step: the optimizer step reached.
      max_steps: the step training ends at.
      metrics: the loss and compiled metrics `fit` reported, as floats.
      steps_per_sec: steps per second since the previous report (None when no
        time has passed).
      secs_left: `(max_steps - step) / steps_per_sec`, or None.
      learning_rate: the current learning rate, when it follows a schedule.
    """

    step: int
    max_steps: int
    metrics: Mapping[str, float]
    steps_per_sec: float | None
    secs_left: float | None
    learning_rate: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "max_steps": self.max_steps, "metrics": dict(self.metrics),
                "steps_per_sec": self.steps_per_sec, "secs_left": self.secs_left}


def describe_progress(progress: Progress) -> str:
    """`step 200/600: loss = 0.3121, accuracy = 0.9125 (41.3 steps/s, 10s left)`."""
    metrics = ", ".join(f"{name} = {value:.4g}" for name, value in progress.metrics.items())
    rate = f"{format_rate(progress.steps_per_sec)} steps/s"
    left = ("done" if progress.step >= progress.max_steps
            else f"{format_secs(progress.secs_left)} left")
    return (f"step {progress.step}/{progress.max_steps}"
            + (f": {metrics}" if metrics else "") + f" ({rate}, {left})")


def log_progress(progress: Progress) -> None:
    """The sink that logs one line per report through trainexec's logger."""
    logger.info("%s", describe_progress(progress))


def scalar_logs(logs: Mapping[str, Any] | None) -> dict[str, float]:
    """The scalar values of Keras `logs`, as floats: tensors, NumPy values and
    ParameterServerStrategy `RemoteValue`s (fetched) alike; others are left out."""
    return {name: value for name, value in log_values(logs).items()
            if isinstance(value, float)}


class ProgressTracker:
    """Decides when a report is due and makes it (see the module doc).

    Args:
      max_steps: the step training ends at.
      every_steps: a report each time the step passes a multiple of this, and
        at `max_steps`.
      sinks: called with each `Progress` (what they return is ignored); one that
        raises is logged and dropped
        from nothing else (the others still run, training goes on).
      clock: time source for the rate (tests pass a fake one).
    """

    def __init__(self, max_steps: int, every_steps: int,
                 sinks: Iterable[Callable[[Progress], object]] = (log_progress,),
                 clock: Clock | None = None) -> None:
        self.max_steps = int(max_steps)
        self.every_steps = int(every_steps)
        self.sinks = list(sinks)
        self._clock = clock or SystemClock()
        self._window: tuple[float, int] | None = None  # (time, step) of the last report
        self._epoch_start = 0  # the estimated step at the start of the current epoch
        self._reported = -1
        self.last: Progress | None = None

    def begin(self, step: int) -> None:
        """A `fit` call starts at `step` (the rate restarts: time between calls,
        such as an evaluation, is not training time)."""
        self._window = (self._clock.now(), step)
        self._epoch_start = step
        if self._reported < 0:
            self._reported = step

    def epoch_started(self, step_estimate: int) -> None:
        self._epoch_start = step_estimate

    def estimate(self, batch: int) -> int:
        """The step after `batch` (0-based, in the current epoch), without
        asking the optimizer."""
        return self._epoch_start + batch + 1

    def due(self, step_estimate: int) -> bool:
        """Whether a report is due at (about) this step."""
        if step_estimate >= self.max_steps > self._reported:
            return True
        return step_estimate // self.every_steps > self._reported // self.every_steps

    def report(self, step: int, metrics: Mapping[str, float],
               learning_rate: float | None = None) -> Progress:
        """Makes the report at the optimizer's `step` and hands it to the sinks."""
        now = self._clock.now()
        since, at = self._window if self._window is not None else (now, step)
        rate = (step - at) / (now - since) if now > since and step > at else None
        left = (self.max_steps - step) / rate if rate else None
        progress = Progress(step, self.max_steps, dict(metrics), rate,
                            0.0 if step >= self.max_steps else left, learning_rate)
        self._window = (now, step)
        self._reported = step
        self.last = progress
        for sink in self.sinks:
            try:
                sink(progress)
            except Exception:  # a report must never stop training
                logger.warning("Progress report to %s failed", sink, exc_info=True)
        return progress


def _learning_rate(optimizer: Any) -> float | None:
    """The current learning rate when the optimizer follows a schedule, else None."""
    import tensorflow as tf

    schedule_types = tuple(t for t in (
        getattr(getattr(tf.keras.optimizers, "schedules", None), "LearningRateSchedule", None),
    ) if isinstance(t, type))
    scheduled = learning_rate_schedule(optimizer)
    if not any(isinstance(scheduled, kind) for kind in schedule_types):
        return None
    try:
        return float(scheduled(optimizer.iterations))
    except Exception:
        return None


def replicas_summed(model: Any) -> int:
    """How many replicas' values Keras 2 adds up in a `fit` batch's logs.

    Keras 2 (tf_keras, tf.keras 2.15) reduces each step's outputs across
    replicas with "sum" by default (`Model.distribute_reduction_method`
    "auto"), so under MirroredStrategy or MultiWorkerMirroredStrategy a batch's
    loss and accuracy are the sum of every replica's mean (an accuracy of 2.9
    with 3 replicas); Keras 3 takes the mean. The replicas see equal batches,
    so dividing by their number gives the mean.
    """
    from trainexec.keras.strategy import is_keras_3

    if is_keras_3():
        return 1
    if getattr(model, "distribute_reduction_method", "auto") not in ("auto", "sum"):
        return 1
    strategy = model.distribute_strategy
    if "TPU" in type(strategy).__name__:
        return 1
    return max(1, int(getattr(strategy, "num_replicas_in_sync", 1) or 1))


def progress_callback(tracker: ProgressTracker) -> Any:
    """A Keras callback feeding `tracker` (Keras 3 and Keras 2 alike).

    It accepts the logs as `fit` has them (`_supports_tf_logs`): tensors are
    converted only when a report is due, and ParameterServerStrategy allows it.
    """
    import tensorflow as tf

    class TrainingProgress(tf.keras.callbacks.Callback):
        """Reports training progress every `tracker.every_steps` steps."""

        def __init__(self) -> None:
            super().__init__()
            mark_takes_tf_logs(self)
            self.tracker = tracker
            self._epochs = 0
            self._fit_start = 0
            self._summed = 1

        def _step(self) -> int:
            return int(self.model.optimizer.iterations.numpy())

        def on_train_begin(self, logs=None):
            self._fit_start, self._epochs = self._step(), 0
            self._summed = replicas_summed(self.model)
            self.tracker.begin(self._fit_start)

        def on_epoch_begin(self, epoch, logs=None):
            steps = (self.params or {}).get("steps") or 0
            self.tracker.epoch_started(self._fit_start + self._epochs * steps)

        def on_epoch_end(self, epoch, logs=None):
            self._epochs += 1

        def on_train_batch_end(self, batch, logs=None):
            estimate = self.tracker.estimate(batch)
            if self.tracker.due(estimate):
                metrics = {name: value / self._summed
                           for name, value in scalar_logs(logs).items()}
                # Under ParameterServerStrategy the step of this batch's call is
                # done once its logs are fetched, but another worker may still run
                # an earlier call: the optimizer lags the batches run. The batch
                # index counts them; the optimizer is ahead after a replayed step.
                self.tracker.report(max(self._step(), estimate), metrics,
                                    _learning_rate(self.model.optimizer))

    return TrainingProgress()
