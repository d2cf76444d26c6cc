"""A ParameterServerStrategy worker or ps of a Keras job: serve, then exit.

The task serves (`trainexec.tasks.serving`) until the chief's training is over,
checking every `poll_secs`, and returns (the process then exits 0; the gRPC
server lasts until it does):

* the chief recorded that its training finished since this task started
  (`trainexec.records.finished_tasks`, by file times of the shared file system); or
* the chief's completion record (`trainexec.records.completion`) was written since
  this task started; or
* whatever its age, the completion record and the latest checkpoint have
  reached the run's `max_steps` (`trainexec.records.run_state.over_at_max_steps`): the
  run is over, and a server restarted after its end stops at once instead of
  waiting for a chief that will never train again.

A worker then records that it finished, as training tasks do. Its gRPC
channels get keepalive (`trainexec.keras.keepalive`), so a step waiting on a
ps that is cut off fails instead of hanging.

Example:
    ```python
    serve_until_training_over(plan, model_dir, max_steps=200, poll_secs=1.0)
    ```
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from trainexec.records.checkpoints import latest_checkpoint
from trainexec.clock import Clock
from trainexec.cluster.config import CHIEF, WORKER
from trainexec.records.finished_tasks import record_task_finished
from trainexec.keras.keepalive import apply_keepalive
from trainexec.keras.strategy import StrategyPlan
from trainexec.tasks.serving import ServingJob
from trainexec.tasks.serving import serve_until_training_over as serve
from trainexec.cluster.server import start_standard_server

__all__ = ["CHIEF_TASK", "serve_until_training_over"]

logger = logging.getLogger(__name__)

CHIEF_TASK = f"{CHIEF}:0"


def serve_until_training_over(plan: StrategyPlan, model_dir: str, max_steps: int | None,
                              poll_secs: float = 1.0, clock: Clock | None = None,
                              server_factory: Callable[..., Any] | None = None) -> Any:
    """Starts this task's server and returns once training is over (module doc).

    Returns the server, which serves until the process exits.
    """
    task = plan.cluster.task_name

    def latest_step() -> int | None:
        latest = latest_checkpoint(model_dir)
        return latest.step if latest else None

    apply_keepalive()  # before the server makes its gRPC channels (to the ps)
    server, _ = serve(
        ServingJob(task=task, model_dir=model_dir,
                   waited_for=frozenset({plan.cluster.chief_task or CHIEF_TASK}),
                   max_steps=max_steps, serves="ParameterServerStrategy training"),
        start_server=lambda: start_standard_server(plan.cluster,
                                                   server_factory=server_factory),
        latest_step=latest_step, poll_secs=poll_secs, clock=clock)
    if plan.cluster.task_type == WORKER:
        record_task_finished(model_dir, task)
    return server
