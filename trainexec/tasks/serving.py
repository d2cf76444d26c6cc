"""Serve until training is over: the one loop behind every task that only serves.

TensorFlow's servers serve forever (`server.join()`, tensorflow/tensorflow#25858),
so something must end the tasks that only serve: an Estimator's ps
and a ParameterServerStrategy worker or ps of a Keras job (`trainexec.tasks.roles`
runs it for both, with their trainers' hooks). Before it starts its server, the task
writes its start marker (`trainexec.records.finished_tasks.FinishedTasks.starting_now`),
so no task it waits for can finish unseen; then it checks every `poll_secs`
and returns once `trainexec.records.run_state.serving_stop_reason` says the run is over
for it. It says what it waits for when it starts and at least once a minute.

The TensorFlow server lasts until the process exits: TensorFlow's gRPC server
cannot be stopped, and dropping the reference frees neither it nor its port
(see `trainexec.cluster.server.start_standard_server`). The caller returns, and the
process then exits 0.

Example:
    ```python
    server, reason = serve_until_training_over(
        ServingJob(task="ps:0", model_dir=model_dir, waited_for={"chief:0", "worker:0"},
                   max_steps=1000, drain_secs=10),
        start_server=lambda: start_standard_server(cluster),
        latest_step=lambda: latest_step_of(model_dir), poll_secs=1.0, clock=clock)
    ```
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable

from trainexec.clock import Clock, SystemClock
from trainexec.records.completion import read_training_complete
from trainexec.records.finished_tasks import FinishedTasks
from trainexec.records.run_state import ServingObservation, over_at_max_steps, serving_stop_reason

__all__ = ["STILL_WAITING_LOG_SECS", "ServingJob", "serve_until_training_over",
           "wait_for_tasks_to_finish", "wait_for_training_peers", "PEER_EXIT_WAIT_SECS"]

logger = logging.getLogger(__name__)

STILL_WAITING_LOG_SECS = 60.0


@dataclasses.dataclass(frozen=True)
class ServingJob:
    """Who serves, for whom, and how long a finished run waits for stragglers.

    `waited_for`: the training tasks whose finished records end the serving;
    `drain_secs`: once training is over, how long those still missing get to
    record finishing; `serves`: what it serves, for the log.
    """

    task: str
    model_dir: str
    waited_for: frozenset
    max_steps: int | None
    drain_secs: float = 0.0
    serves: str = ""


def serve_until_training_over(job: ServingJob, start_server: Callable[[], Any],
                              latest_step: Callable[[], int | None], poll_secs: float = 1.0,
                              clock: Clock | None = None) -> tuple[Any, str]:
    """Starts the server and returns `(server, why it stopped)` once training is over."""
    clock = clock or SystemClock()
    # Marked before the server starts, so a task that needs it finishes later.
    watch = FinishedTasks.starting_now(job.model_dir, job.task)
    server = start_server()
    waited = ", ".join(sorted(job.waited_for))
    one = len(job.waited_for) == 1
    logger.info("%s serves%s until %s record%s that %s training finished (in %s), or the "
                "chief records that training is complete (%s)", job.task,
                f" {job.serves}" if job.serves else "", waited, "s" if one else "",
                "its" if one else "their", watch.directory, watch.completion_path)
    started = clock.now()
    over_since = None
    looked = False
    next_log = started  # the first look says what it waits for
    while True:
        now = clock.now()
        missing = frozenset(job.waited_for - watch.finished())
        over, this_run = _training_over(job, watch, latest_step) if missing else (None, False)
        if over is None:
            over_since = None  # (a record cleared by a new run's chief)
        elif over_since is None:
            over_since = now
            logger.info("Training is over: %s", over)
        reason = serving_stop_reason(ServingObservation(
            now=now, waited_for=job.waited_for, missing=missing,
            unfinished=frozenset(job.waited_for - watch.ever_finished()) if over
            else frozenset(),
            over=over, over_this_run=this_run, over_since=over_since), job.drain_secs)
        if reason is not None:
            break
        if now >= next_log:
            next_log = now + STILL_WAITING_LOG_SECS
            logger.info("%s %s: waiting for %s to record that training finished (in %s)%s",
                        job.task, f"still serving after {now - started:.0f}s"
                        if looked else "serving", ", ".join(sorted(missing)),
                        watch.directory,
                        f"; training is over, stopping within {job.drain_secs:.0f}s of "
                        "seeing that" if over else "")
        looked = True
        clock.sleep(poll_secs)
    logger.info("%s stops serving: %s", job.task, reason)
    return server, reason


def _training_over(job: ServingJob, watch: FinishedTasks,
                   latest_step: Callable[[], int | None]) -> tuple[str | None, bool]:
    """(why the completion record shows training is over, or None; whether the
    record is from this run)."""
    if watch.completed_since():
        return "the chief recorded that training is complete", True
    if job.max_steps is None:
        return None, False
    record = read_training_complete(job.model_dir)
    if record is None or not record.matches(job.max_steps):
        return None, False
    step = latest_step()
    if not over_at_max_steps(record, step, job.max_steps):
        return None, False
    return (f"the completion record and the latest checkpoint (step {step}) have reached "
            f"max_steps {job.max_steps}", False)


# How long a MultiWorkerMirroredStrategy task waits for its peers once its training returned.
PEER_EXIT_WAIT_SECS = 60.0


def wait_for_training_peers(watch: FinishedTasks, cluster: Any, clock: Clock | None = None
                            ) -> bool:
    """This task's training peers (`cluster.training_tasks` but itself) awaited for up to
    `PEER_EXIT_WAIT_SECS` (`wait_for_tasks_to_finish`), saying so."""
    peers = frozenset(cluster.training_tasks) - {cluster.task_name}
    logger.info("Waiting for %s to finish training before leaving", ", ".join(sorted(peers)))
    return wait_for_tasks_to_finish(watch, peers, PEER_EXIT_WAIT_SECS, clock=clock)


def wait_for_tasks_to_finish(watch: FinishedTasks, tasks: frozenset, timeout_secs: float,
                             poll_secs: float = 0.5, clock: Clock | None = None) -> bool:
    """Waits until every task of `tasks` has recorded finishing (since `watch`
    started); False after `timeout_secs` without it.

    Every MultiWorkerMirroredStrategy task calls this once its own training
    returned: a peer's last `fit` steps still need every task's server (an
    exited task stalls the others until the coordination service declares it
    dead, measured 18 s), so they all leave together.
    """
    clock = clock or SystemClock()
    started = clock.now()
    while True:
        missing = tasks - watch.finished()
        if not missing:
            return True
        if clock.now() - started >= timeout_secs:
            logger.warning("%s did not record finishing within %.0fs; leaving anyway",
                           ", ".join(sorted(missing)), timeout_secs)
            return False
        clock.sleep(poll_secs)
