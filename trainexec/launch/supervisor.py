"""The supervision loop: carries out the exit policy for a started cluster.

Decide, then act: each `Supervisor.check()` records the tasks that ended since
the last look, asks the pure `policy.decide` what to do and does it (restart a
restart group, leave a task, finish the job), until the answer is to wait or
the job is over, with its `JobResult`. The supervisor keeps the job's restart
count and the restart rules tasks announced; it touches no process itself: the
cluster that owns the tasks (`LocalCluster`) sees their exits and starts and
stops their processes for it, through the `TaskProcesses` it is given
(`TaskActions`; tests give it fakes and a fake clock).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any, Callable, Mapping, Protocol, Sequence

from trainexec.clock import Clock, SystemClock
from trainexec.contract.exit_codes import ExitCodes
from trainexec.contract.exit_watchdog import killed_by_watchdog, take_outside_exit
from trainexec.launch import policy
from trainexec.contract.restart_announcements import read_rules
from trainexec.contract.task_status import read_statuses
from trainexec.launch.restart_groups import merge_rules
from trainexec.launch.result import (JobResult, TaskOutcome, exit_text, failure_reason,
                                     how_it_ended, name_tasks, signal_name, stopped_reason)
from trainexec.launch.task import Task

__all__ = ["Supervisor", "TaskActions", "TaskProcesses", "task_state"]

# The launcher's records keep the one logger name they had before the split.
logger = logging.getLogger("trainexec.launch")


class TaskProcesses(Protocol):
    """What the supervisor asks of the cluster that owns the tasks' processes."""

    def poll(self, task: Task) -> int | None:
        """The current run's exit code once it has ended (recorded in the task:
        `returncode`, `ended_at`), or None while it runs."""

    def join_output(self, task: Task) -> None:
        """Waits (briefly) for the rest of an ended run's output."""

    def spawn(self, task: Task) -> None:
        """Starts another run of a task, with the same TF_CONFIG."""

    def stop(self, tasks: Sequence[Task], grace: float) -> None:
        """Stops tasks: SIGTERM, SIGKILL after `grace` seconds (0: SIGKILL at once)."""

    def sweep(self, task: Task) -> None:
        """SIGKILLs what is left of a task's process group and reaps it."""

    def stop_all(self) -> None:
        """Stops every task and releases the cluster's resources."""


@dataclasses.dataclass(frozen=True)
class TaskActions:
    """`TaskProcesses` from functions: `LocalCluster`'s, over `processes`.

    Attributes:
      spawn: starts another run of a task, with the same TF_CONFIG.
      stop: stops tasks (SIGTERM, SIGKILL after the grace seconds given; 0: SIGKILL).
      sweep: SIGKILLs what is left of a task's process group and reaps it.
      stop_all: stops every task and releases the cluster's resources.
      poll: a task's exit once it ended, recorded not reaped (`processes.poll`).
      join_output: waits for an ended run's output (`processes.join_reader`).
    """

    spawn: Callable[[Task], None]
    stop: Callable[[Sequence[Task], float], None]
    sweep: Callable[[Task], None]
    stop_all: Callable[[], None]
    poll: Callable[[Task], int | None]
    join_output: Callable[[Task], None]


def task_state(task: Task) -> policy.TaskState:
    """The task's state as the policy sees it (`policy.RUNNING`, ...)."""
    if task.running:
        return policy.RUNNING
    if task.stopped:
        return policy.STOPPED
    if task.returncode == 0:
        return policy.EXITED
    return policy.LEFT if task.left else policy.FAILED


class Supervisor:
    """Drives one started job to its end (see the module doc).

    `primary` names the tasks that must exit 0; `flag_groups` are the restart
    groups given as options (task names); with `wait_for_announced`, tasks that
    announce they end by themselves are waited for too once the primaries are
    done. `launch_dir` is where tasks announce their restart groups (and where a
    task's exit watchdog records the code it was ending with). `actions`
    sees the tasks' exits and starts and stops them (`TaskProcesses`). `clock`
    (default: the system's) times the deadline and the job's elapsed seconds.
    """

    def __init__(self, tasks: Sequence[Task], actions: TaskProcesses, *,
                 primary: Sequence[str], max_restarts: int, grace_secs: float,
                 flag_groups: Sequence[tuple[str, ...]], wait_for_announced: bool,
                 launch_dir: str | None, started_at: float,
                 restart_policies: Mapping[str, str] | None = None,
                 exit_codes: ExitCodes | None = None, clock: Clock | None = None) -> None:
        self._tasks = tasks
        self.clock = clock or SystemClock()
        self._actions = actions
        self.primary = primary
        self.max_restarts = max_restarts
        self.grace_secs = grace_secs
        self.flag_groups = flag_groups
        self.wait_for_announced = wait_for_announced
        self.launch_dir = launch_dir
        self.started_at = started_at
        self.restart_policies = dict(restart_policies or {})
        self.exit_codes = exit_codes or ExitCodes()
        self.restarts = 0  # automatic group restarts, one per fault
        self._announced: tuple[int | None, dict] = (None, {})  # (dir mtime, rules)

    def _task(self, name: str) -> Task:
        return next(task for task in self._tasks if task.name == name)

    def _cause(self, decision: policy.Decision) -> tuple[Task, int]:
        """The task a RESTART, LEAVE or FAIL decision is about, and the code it ended
        with: the policy decides those for a task that has ended, and names it."""
        assert decision.cause is not None, f"{decision.action} names the task it is about"
        task = self._task(decision.cause)
        assert task.returncode is not None, f"{task.name} has ended"
        return task, task.returncode

    def check(self, deadline: float | None, timeout: float | None,
              interrupt: int | None) -> JobResult | None:
        """One look at the tasks: asks the policy what to do and does it, until it
        says wait (None) or the job is over (its result). `interrupt` is the
        signal that interrupted the job, if one did."""
        for task in self._tasks:  # newly ended tasks: recorded, not reaped
            if task.running and self._actions.poll(task) is not None:
                code = self._counted_exit(task)
                if task.stopped or code == 0:  # its group lives on until the task is stopped
                    self._actions.join_output(task)
                    logger.info("%s exited with code %s", task.name, code)
                else:
                    # what it left behind dies with it, before any restart
                    self._actions.sweep(task)
        timed_out = deadline is not None and self.clock.now() >= deadline
        while True:
            decision = policy.decide(self._view(timed_out, interrupt is not None))
            action = decision.action
            if action == policy.WAIT:
                return None
            if action == policy.RESTART:
                self._restart_group(decision)
                continue
            if action == policy.LEAVE:
                task, code = self._cause(decision)
                task.left = True
                logger.warning("%s %s and %s: the job goes on without it (its strategy "
                               "tolerates losing it)", task.name, how_it_ended(code),
                               "is not restarted (a permanent exit)" if decision.permanent
                               else "has no restarts left")
                continue
            if action == policy.FAIL:
                return self._finish_failed(*self._cause(decision), decision.permanent)
            if action == policy.SUCCEED:
                done = name_tasks(self.primary)
                left = [t.name for t in self._tasks if t.running]
                if left:
                    logger.info("%s done: stopping %s", done, name_tasks(left))
                return self._finish(True, f"{done} finished successfully")
            if action == policy.STOP and interrupt is not None:
                return self._finish_stopped(f"interrupted by {signal_name(interrupt)}",
                                            signum=interrupt)
            if action == policy.STOP:
                return self._finish_stopped(f"timed out after {timeout:g}s")
            unfinished = ", ".join(f"{name} ({exit_text(t.returncode, t.stopped)})"
                                   for name in decision.tasks for t in [self._task(name)])
            return self._finish(False, f"every task has ended but not {unfinished}")

    def _counted_exit(self, task: Task) -> int | None:
        """The code a newly ended task counts with: its own, except for a task its exit
        deadline's watchdog killed once its role was over (TensorFlow's shutdown held
        it), which counts with the code it was ending with, as the watchdog recorded
        (`trainexec.contract.exit_watchdog`)."""
        code = task.returncode
        if task.stopped or not killed_by_watchdog(code):
            return code
        ending = take_outside_exit(self.launch_dir, task.name, task.pid)
        if ending is None:
            return code
        logger.warning("%s was killed by its exit deadline's watchdog as it was ending "
                       "(TensorFlow's shutdown held it); it was ending with %s: counted "
                       "as exit %s", task.name, ending, ending)
        task.returncode = ending
        return ending

    def _announced_rules(self, names: list[str]) -> dict:
        """The restart rules tasks announced, read again only when the launch
        directory changed (an announcement replaces a file there): the policy
        looks every few milliseconds."""
        try:
            stamp = os.stat(self.launch_dir).st_mtime_ns if self.launch_dir else None
        except OSError:
            stamp = None
        if stamp is None or stamp != self._announced[0]:
            self._announced = (stamp, read_rules(self.launch_dir, names))
        return self._announced[1]

    def _view(self, timed_out: bool, interrupted: bool) -> policy.JobView:
        tasks = tuple(policy.TaskView(t.name, task_state(t), t.returncode,
                                      t.crashes_restarted, t.ended_at or 0.0,
                                      self.restart_policies.get(t.name, policy.EXIT_CODE))
                      for t in self._tasks)
        rules, ending = {}, ()
        primaries_done = all(t.state == policy.EXITED for t in tasks if t.name in self.primary)
        if any(t.state == policy.FAILED for t in tasks) or (
                primaries_done and self.wait_for_announced):  # read only when needed
            names = [t.name for t in self._tasks]
            announced = self._announced_rules(names)
            rules = merge_rules(announced, self.flag_groups, names)
            if self.wait_for_announced:
                ending = tuple(name for name, rule in announced.items()
                               if rule.ends_by_itself)
        return policy.JobView(tasks, tuple(self.primary), self.max_restarts, rules,
                              interrupted=interrupted, timed_out=timed_out, ending=ending,
                              codes=self.exit_codes)

    def _restart_group(self, decision: policy.Decision) -> None:
        """Stops what still runs of the group (SIGKILL, or SIGTERM and the grace
        period after a preemption), then starts every member again."""
        cause, code = self._cause(decision)
        cause.crashes_restarted += 1
        self.restarts += 1
        group = [self._task(name) for name in decision.tasks]
        peers = [t for t in group if t is not cause]
        together = (f" together with {', '.join(t.name for t in peers)} (its restart group)"
                    if peers else "")
        logger.warning("%s %s: restarting it%s with the same TF_CONFIG (%d/%d)", cause.name,
                       how_it_ended(code), together, cause.crashes_restarted,
                       self.max_restarts)
        self._actions.stop(peers, self.grace_secs if decision.gentle else 0.0)
        for task in group:
            self._actions.sweep(task)
            task.restarts += 1
            task.left = False
            self._actions.spawn(task)

    def _finish(self, ok: bool, reason: str, **fields: Any) -> JobResult:
        # What the tasks reported, read before stop_all() removes the launch directory.
        reports = read_statuses(self.launch_dir, [t.name for t in self._tasks])
        self._actions.stop_all()
        outcomes = tuple(TaskOutcome(t.name, t.address, t.returncode, t.stopped, t.restarts,
                                     t.run_secs) for t in self._tasks)
        return JobResult(ok=ok, reason=reason, tasks=outcomes,
                         elapsed_secs=self.clock.now() - self.started_at,
                         restarts=self.restarts, reports=reports, **fields)

    def _finish_failed(self, task: Task, code: int, permanent: bool = False) -> JobResult:
        """`task` ended with `code` and fails the job."""
        reason, lines = failure_reason(task, self.max_restarts, self.exit_codes,
                                       self.restart_policies.get(task.name, policy.EXIT_CODE)
                                       if permanent else None)
        logger.error("%s %s: stopping every task", task.name, how_it_ended(code))
        return self._finish(False, reason, failed_task=task.name, exit_code=code,
                            last_lines=tuple(lines))

    def _finish_stopped(self, why: str, signum: int | None = None) -> JobResult:
        running = [t for t in self._tasks if t.running]
        reason = stopped_reason(why, running, self.primary)
        logger.error("%s: stopping every task", why)
        return self._finish(False, reason, still_running=tuple(t.name for t in running),
                            signal=signum)
