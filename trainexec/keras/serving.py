"""A ParameterServerStrategy worker or ps of a Keras job: serve, then exit.

TensorFlow's servers serve forever, so something must end them. These serve
until the chief's training is over, checking every `poll_secs`, and return
(the process then exits 0; the gRPC server lasts until it does):

* the chief recorded that its training finished since this task started
  (`trainexec.finished_tasks`, by file times of the shared file system); or
* the chief's completion record (`trainexec.completion`) was written since
  this task started; or
* whatever its age, the completion record and the latest checkpoint have
  reached the run's `max_steps`: the run is over, and a server restarted
  after its end stops at once instead of waiting for a chief that will never
  train again.

It logs what it waits for when it starts and at least once a minute.

Example::

    serve_until_training_over(plan, model_dir, max_steps=200, poll_secs=1.0)
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable

from trainexec.checkpoints import latest_checkpoint
from trainexec.clock import Clock, SystemClock
from trainexec.cluster import CHIEF, WORKER
from trainexec.completion import read_training_complete
from trainexec.finished_tasks import FinishedTasks, record_task_finished
from trainexec.keras.strategy import StrategyPlan
from trainexec.server import start_standard_server

__all__ = ["STILL_WAITING_LOG_SECS", "ServeObservation", "decide",
           "serve_until_training_over"]

logger = logging.getLogger(__name__)

STILL_WAITING_LOG_SECS = 60.0
CHIEF_TASK = f"{CHIEF}:0"


@dataclasses.dataclass(frozen=True)
class ServeObservation:
    """One look at the model directory.

    `chief_finished`: the chief recorded finishing since this task started;
    `completed_this_run`: the completion record was written since then;
    `recorded_step` / `latest_step`: the completion record's step (None: no
    record, or one of another max_steps) and the latest checkpoint's.
    """

    chief_finished: bool = False
    completed_this_run: bool = False
    recorded_step: int | None = None
    latest_step: int | None = None


def decide(obs: ServeObservation, max_steps: int | None) -> str | None:
    """Why serving stops now, or None to keep serving (pure)."""
    if obs.chief_finished:
        return f"{CHIEF_TASK} recorded that its training finished"
    if obs.completed_this_run:
        return "the chief recorded that training is complete"
    if (max_steps is not None and obs.recorded_step is not None
            and obs.latest_step is not None
            and min(obs.recorded_step, obs.latest_step) >= max_steps):
        return (f"the completion record and the latest checkpoint (step "
                f"{obs.latest_step}) have reached max_steps {max_steps}: the run is over")
    return None


def _observe(watch: FinishedTasks, model_dir: str, max_steps: int | None) -> ServeObservation:
    chief_finished = CHIEF_TASK in watch.finished()
    completed = not chief_finished and watch.completed_since()
    record = latest = None
    if not (chief_finished or completed) and max_steps is not None:
        done = read_training_complete(model_dir)
        if done is not None and done.matches(max_steps):
            record = done.global_step
            info = latest_checkpoint(model_dir)
            latest = info.step if info else None
    return ServeObservation(chief_finished, completed, record, latest)


def serve_until_training_over(plan: StrategyPlan, model_dir: str, max_steps: int | None,
                              poll_secs: float = 1.0, clock: Clock | None = None,
                              server_factory: Callable[..., Any] | None = None) -> Any:
    """Starts this task's server and returns once training is over (module doc).

    Returns the server, which serves until the process exits.
    """
    clock = clock or SystemClock()
    task = plan.cluster.task_name
    # Marked before the server starts, so the chief cannot finish before it.
    watch = FinishedTasks.starting_now(model_dir, task)
    server = start_standard_server(plan.cluster, server_factory=server_factory)
    logger.info("%s serves ParameterServerStrategy training until %s records that its "
                "training finished (in %s) or that training is complete (%s)", task,
                CHIEF_TASK, watch.directory, watch.completion_path)
    started = clock.now()
    next_log = started + STILL_WAITING_LOG_SECS
    while True:
        reason = decide(_observe(watch, model_dir, max_steps), max_steps)
        if reason is not None:
            break
        now = clock.now()
        if now >= next_log:
            logger.info("%s still serving after %.0fs: waiting for %s to record that its "
                        "training finished (in %s)", task, now - started, CHIEF_TASK,
                        watch.directory)
            next_log = now + STILL_WAITING_LOG_SECS
        clock.sleep(poll_secs)
    logger.info("%s stops serving: %s", task, reason)
    if plan.cluster.task_type == WORKER:
        record_task_finished(model_dir, task)
    return server
