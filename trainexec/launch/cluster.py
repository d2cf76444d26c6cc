"""`LocalCluster`: starts every task, watches them, acts on the exit policy, stops them.

The orchestration only: the tasks and their TF_CONFIG come from `spec`, their
processes are handled by `processes` (and the `watcher`), what to do when a
task ends is decided by the pure `policy.decide`, with the restart groups of
`restart_groups`, and the outcome is a `result.JobResult`. The package doc
(`trainexec.launch`) describes the exit policy.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Mapping, Sequence

from trainexec.cluster import CHIEF, EVALUATOR, TF_CONFIG, WORKER
from trainexec.errors import ConfigError
from trainexec.launch import policy, processes
from trainexec.launch.processes import Output
from trainexec.launch.restart_groups import (LAUNCH_DIR_ENV, merge_rules, parse_group_flag,
                                             read_rules)
from trainexec.launch.result import (JobResult, TaskOutcome, exit_text, failure_reason,
                                     how_it_ended, signal_name, stopped_reason)
from trainexec.launch.spec import plan_tasks
from trainexec.launch.task import Task
from trainexec.launch.orphan_reaper import Watcher
from trainexec.task_logging import LAUNCHED_TASK_ENV

__all__ = ["LocalCluster"]

# The launcher's records keep the one logger name they had before the split.
logger = logging.getLogger("trainexec.launch")

_POLL_SECS = 0.02
_ATEXIT_LOCK_SECS = 1.0


class LocalCluster:
    """Runs `command` once per task of a local TF_CONFIG cluster.

    Example::

        with LocalCluster([sys.executable, "train.py"], workers=2, ps=1) as c:
            result = c.wait(timeout=120)
        assert result.ok, result.reason

    `env` is added to os.environ for every task; `output` receives every line
    prefixed with "[worker:1] " (a file-like or a callable; default sys.stdout).
    `wait_for` names the tasks ("worker:1") or whole jobs ("worker") that must
    exit 0 for the job to succeed; by default the chief (worker:0 without one)
    and the evaluator. Pass ("chief", "worker", "evaluator") when every worker
    finishes by itself, as Estimator workers do at max_steps, so none is
    stopped early; add "ps" when the ps runs trainexec, which exits once every
    training task has finished (another ps serves until it is stopped).
    `restart_groups` lists groups of task or job names restarted together
    when one of them fails (`[["chief", "worker"]]` for a hand-written
    MultiWorkerMirroredStrategy job; KerasTrainer tasks announce theirs, see
    `trainexec.launch.restart_groups`). Leaving the `with` block always stops every task.
    """

    def __init__(self, command: Sequence[str], workers: int = 1, ps: int = 0,
                 evaluator: bool = False, chief: bool = True, host: str = "127.0.0.1",
                 env: Mapping[str, str] | None = None, max_restarts: int = 0,
                 grace_secs: float = 5.0, output: Output | None = None,
                 wait_for: Sequence[str] | None = None,
                 restart_groups: Sequence[Sequence[str] | str] = ()) -> None:
        if isinstance(command, str) or not command:
            raise ConfigError(f"command is {command!r}: give the program and its "
                              'arguments as a list, e.g. ["python", "train.py"]')
        for field, value in (("workers", workers), ("ps", ps), ("max_restarts", max_restarts)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{field} is {value!r}: expected an integer >= 0")
        if grace_secs < 0:
            raise ConfigError(f"grace_secs is {grace_secs!r}: expected seconds >= 0")
        if not chief and workers == 0:
            raise ConfigError("chief=False with workers=0 leaves no training task: "
                              "keep the chief or use workers >= 1")
        self.command = [str(arg) for arg in command]
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.max_restarts = max_restarts
        self.grace_secs = float(grace_secs)
        self.output = output
        self.evaluator = bool(evaluator)
        spec, tasks = plan_tasks(host, chief, workers, ps, evaluator)  # validates
        self._tasks: list[Task] = tasks
        self.cluster_spec: dict[str, list[str]] = spec
        # Without wait_for, tasks that announce they end by themselves (KerasTrainer's)
        # are waited for too, once the primaries are done.
        self._wait_for_announced = wait_for is None
        if wait_for is None:
            wait_for = [CHIEF + ":0" if chief else WORKER + ":0"] + (
                [EVALUATOR + ":0"] if evaluator else [])
        self.primary = self._task_names(wait_for)
        self._primary_tasks = [self.task(name) for name in self.primary]
        self.restart_groups = self._restart_groups(restart_groups)
        self._launch_dir: str | None = None  # TRAINEXEC_LAUNCH_DIR, made by start()
        self._announced: tuple[int | None, dict] = (None, {})  # (dir mtime, rules)
        self._restarts = 0
        self._lock = threading.RLock()
        self._started = False
        self._result: JobResult | None = None
        self._interrupt: int | None = None
        self._force = False
        self._start_time = 0.0
        self._watcher = Watcher()
        self._prctl: Callable[..., int] | None = None

    # -- lookup ------------------------------------------------------------------------
    @property
    def tasks(self) -> list[Task]:
        """All tasks in order: chief, workers, ps, evaluator."""
        return list(self._tasks)

    def task(self, name: str) -> Task:
        """The task called `name` ("worker:1"; "ps" means "ps:0")."""
        key = name if ":" in name else f"{name}:0"
        for task in self._tasks:
            if task.name == key:
                return task
        raise KeyError(f"no task {name!r} in this cluster: tasks are "
                       f"{', '.join(t.name for t in self._tasks)}")

    def _task_names(self, wait_for: Sequence[str]) -> list[str]:
        """Expands `wait_for` (task or job names) to task names, in task order."""
        if isinstance(wait_for, str) or not wait_for:
            raise ConfigError(f"wait_for is {wait_for!r}: give a list of task or job names, "
                              'e.g. ["chief", "worker", "evaluator"]')
        wanted: set[str] = set()
        for name in wait_for:
            matches = [t.name for t in self._tasks if name in (t.task_type, t.name)]
            if not matches:
                raise ConfigError(
                    f"wait_for names {name!r}, which is not in this cluster: use a task "
                    f"({', '.join(t.name for t in self._tasks)}) or a job name")
            wanted.update(matches)
        return [t.name for t in self._tasks if t.name in wanted]

    def _restart_groups(self, groups: Sequence[Sequence[str] | str]) -> list[tuple[str, ...]]:
        """Expands each group (a list of names, or "chief,worker") to task names."""
        if isinstance(groups, str):
            groups = [groups]
        names = [t.name for t in self._tasks]
        expanded = []
        for group in groups:
            text = group if isinstance(group, str) else ",".join(map(str, group))
            try:
                expanded.append(parse_group_flag(text, names))
            except ValueError as err:
                raise ConfigError(str(err).replace("--restart-group", "restart_groups")
                                  ) from None
        return expanded

    def describe(self) -> str:
        """One line: the cluster spec, the evaluator if any, and the command."""
        extra = " + evaluator:0 (outside the cluster)" if self.evaluator else ""
        return (f"cluster {json.dumps(self.cluster_spec)}{extra}; "
                f"command: {subprocess.list2cmdline(self.command)}")

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> "LocalCluster":
        """Starts every task; on any error stops those already started and raises."""
        with self._lock:
            if self._started:
                raise RuntimeError("this LocalCluster was already started")
            self._started = True
            self._start_time = time.monotonic()
            self._launch_dir = tempfile.mkdtemp(prefix="trainexec-launch-")
            self._prctl = processes.load_prctl()
            if self._prctl is None:
                logger.warning("the parent-death signal (Linux prctl PR_SET_PDEATHSIG) is not "
                               "available on %s: if the launcher is killed, only its watcher "
                               "process stops the tasks", sys.platform)
            try:
                for task in self._tasks:
                    self._spawn(task)
            except BaseException:
                self.stop_all()
                raise
        return self

    def _spawn(self, task: Task) -> None:
        if task._proc is not None:
            # the previous run's group, before its id can be reused
            processes.sweep(task, self._watcher)
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.env)
        env[TF_CONFIG] = task.tf_config
        env[LAUNCHED_TASK_ENV] = task.name  # its lines are prefixed here, not again
        if self._launch_dir:
            env[LAUNCH_DIR_ENV] = self._launch_dir
        preexec = processes.die_with_parent(self._prctl, os.getpid()) if self._prctl else None
        proc = processes.start(task, self.command, env, preexec, self._watcher, self._write)
        atexit.unregister(self._kill_everything)  # safety net, registered once
        atexit.register(self._kill_everything)
        if task.started_at is None:
            task.started_at = time.monotonic()
        logger.info("started %s (pid %s) %s", task.name, proc.pid,
                    task.address or "outside the cluster")

    def _write(self, line: str) -> None:
        processes.write_line(self.output, line)

    def _stop_tasks(self, tasks: Sequence[Task], grace: float) -> None:
        with self._lock:
            live = []
            for task in tasks:
                if task._proc is None or task._swept:
                    continue
                if processes.poll(task) is None:
                    task.stopped = True
                    live.append(task)
                    if grace > 0:
                        logger.info("stopping %s (SIGTERM)", task.name)
                        processes.signal_group(task, signal.SIGTERM)
                # else it ended on its own: its real code is kept
            deadline = time.monotonic() + grace
            while (grace > 0 and not self._force and time.monotonic() < deadline
                   and any(processes.poll(t) is None for t in live)):
                time.sleep(_POLL_SECS)
            for task in tasks:  # SIGKILL stragglers and any processes left in the group
                if task._proc is None or task._swept:
                    continue
                if task in live and processes.poll(task) is None and grace > 0:
                    logger.warning("%s still running %.1fs after SIGTERM: SIGKILL",
                                   task.name, grace)
                processes.sweep(task, self._watcher)

    def stop(self, name: str) -> Task:
        """Stops one task: SIGTERM to its process group, SIGKILL after grace_secs."""
        task = self.task(name)
        self._stop_tasks([task], self.grace_secs)
        return task

    def kill(self, name: str) -> Task:
        """SIGKILLs one task's process group (counted as stopped by us)."""
        task = self.task(name)
        self._stop_tasks([task], 0.0)
        return task

    def restart(self, name: str) -> Task:
        """Stops the task if running and starts it again with the same TF_CONFIG."""
        with self._lock:
            if not self._started:
                raise RuntimeError("start() the cluster before restarting a task")
            task = self.stop(name)
            task.restarts += 1
            self._spawn(task)
            return task

    def stop_all(self) -> None:
        """Stops every task (SIGTERM, SIGKILL after grace_secs); safe to repeat."""
        with self._lock:
            self._stop_tasks(self._tasks, self.grace_secs)
            self._watcher.close()
            atexit.unregister(self._kill_everything)
            if self._launch_dir:
                shutil.rmtree(self._launch_dir, ignore_errors=True)

    def interrupt(self, signum: int = signal.SIGINT) -> None:
        """Makes a running `wait()` stop everything and return.

        Safe to call from a signal handler; a second call skips the grace period.
        """
        if self._interrupt is not None:
            self._force = True
        self._interrupt = signum

    def _kill_everything(self) -> None:
        """atexit safety net: SIGKILLs every group not swept yet (their leaders are
        unreaped, alive or not), without waiting; the zombies go with the process."""
        if not self._lock.acquire(timeout=_ATEXIT_LOCK_SECS):
            return  # another thread is stopping them; the watcher remains
        try:
            for task in self._tasks:
                if task._proc is not None and not task._swept:
                    processes.signal_group(task, signal.SIGKILL)
                    self._watcher.forget(task._proc.pid)  # done: its leader is reaped soon
        finally:
            self._lock.release()

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop_all()

    # -- exit policy -------------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> JobResult:
        """Waits for the job to succeed or fail (see the package doc) and returns
        the result; every task has stopped by then. Repeated calls return it again."""
        if self._result is not None:
            return self._result
        if not self._started:
            raise RuntimeError("call start() (or use `with LocalCluster(...)`) before wait()")
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while self._result is None:
                with self._lock:
                    self._result = self._check(deadline, timeout)
                if self._result is None:
                    time.sleep(_POLL_SECS)
        except BaseException:
            self.stop_all()
            raise
        return self._result

    def _check(self, deadline: float | None, timeout: float | None) -> JobResult | None:
        """One look at the tasks: asks the policy what to do and does it, until it
        says wait (None) or the job is over (its result)."""
        for task in self._tasks:  # newly ended tasks: recorded, not reaped
            if task.running and processes.poll(task) is not None:
                code = task.returncode
                if task.stopped or code == 0:  # its group lives on until the task is stopped
                    processes.join_reader(task)
                    logger.info("%s exited with code %s", task.name, code)
                else:
                    # what it left behind dies with it, before any restart
                    processes.sweep(task, self._watcher)
        timed_out = deadline is not None and time.monotonic() >= deadline
        while True:
            decision = policy.decide(self._view(timed_out))
            action = decision.action
            if action == policy.WAIT:
                return None
            if action == policy.RESTART:
                self._restart_group(decision)
                continue
            if action == policy.LEAVE:
                task = self.task(decision.cause)
                task._left = True
                logger.warning("%s %s and has no restarts left: the job goes on without it "
                               "(its strategy tolerates losing it)", task.name,
                               how_it_ended(task.returncode))
                continue
            if action == policy.FAIL:
                return self._finish_failed(self.task(decision.cause))
            if action == policy.SUCCEED:
                done = " and ".join(self.primary)
                left = [t.name for t in self._tasks if t.running]
                if left:
                    logger.info("%s done: stopping %s", done, ", ".join(left))
                return self._finish(True, f"{done} finished successfully")
            if action == policy.STOP and self._interrupt is not None:
                return self._finish_stopped(f"interrupted by {signal_name(self._interrupt)}",
                                            signum=self._interrupt)
            if action == policy.STOP:
                return self._finish_stopped(f"timed out after {timeout:g}s")
            unfinished = ", ".join(f"{name} ({exit_text(t.returncode, t.stopped)})"
                                   for name in decision.tasks for t in [self.task(name)])
            return self._finish(False, f"every task has ended but not {unfinished}")

    def _state(self, task: Task) -> str:
        if task.running:
            return policy.RUNNING
        if task.stopped:
            return policy.STOPPED
        if task.returncode == 0:
            return policy.EXITED
        return policy.LEFT if task._left else policy.FAILED

    def _announced_rules(self, names: list[str]) -> dict:
        """The restart rules tasks announced, read again only when the launch
        directory changed (an announcement replaces a file there): the policy
        looks every `_POLL_SECS`."""
        try:
            stamp = os.stat(self._launch_dir).st_mtime_ns if self._launch_dir else None
        except OSError:
            stamp = None
        if stamp is None or stamp != self._announced[0]:
            self._announced = (stamp, read_rules(self._launch_dir, names))
        return self._announced[1]

    def _view(self, timed_out: bool) -> policy.JobView:
        tasks = tuple(policy.TaskView(t.name, self._state(t), t.returncode,
                                      t._crashes_restarted, t.ended_at or 0.0)
                      for t in self._tasks)
        rules, ending = {}, ()
        primaries_done = all(t.state == policy.EXITED for t in tasks if t.name in self.primary)
        if any(t.state == policy.FAILED for t in tasks) or (
                primaries_done and self._wait_for_announced):  # read only when needed
            names = [t.name for t in self._tasks]
            announced = self._announced_rules(names)
            rules = merge_rules(announced, self.restart_groups, names)
            if self._wait_for_announced:
                ending = tuple(name for name, rule in announced.items()
                               if rule.ends_by_itself)
        return policy.JobView(tasks, tuple(self.primary), self.max_restarts, rules,
                              interrupted=self._interrupt is not None, timed_out=timed_out,
                              ending=ending)

    def _restart_group(self, decision: policy.Decision) -> None:
        """Stops what still runs of the group (SIGKILL, or SIGTERM and the grace
        period after a preemption), then starts every member again."""
        cause = self.task(decision.cause)
        cause._crashes_restarted += 1
        self._restarts += 1
        group = [self.task(name) for name in decision.tasks]
        peers = [t for t in group if t is not cause]
        together = (f" together with {', '.join(t.name for t in peers)} (its restart group)"
                    if peers else "")
        logger.warning("%s %s: restarting it%s with the same TF_CONFIG (%d/%d)", cause.name,
                       how_it_ended(cause.returncode), together, cause._crashes_restarted,
                       self.max_restarts)
        self._stop_tasks(peers, self.grace_secs if decision.gentle else 0.0)
        for task in group:
            processes.sweep(task, self._watcher)
            task.restarts += 1
            task._left = False
            self._spawn(task)

    def _finish(self, ok: bool, reason: str, **fields: Any) -> JobResult:
        self.stop_all()
        outcomes = tuple(TaskOutcome(t.name, t.address, t.returncode, t.stopped, t.restarts,
                                     t.run_secs) for t in self._tasks)
        return JobResult(ok=ok, reason=reason, tasks=outcomes,
                         elapsed_secs=time.monotonic() - self._start_time,
                         restarts=self._restarts, **fields)

    def _finish_failed(self, task: Task) -> JobResult:
        code = task.returncode
        reason, lines = failure_reason(task, self.max_restarts)
        logger.error("%s %s: stopping every task", task.name, how_it_ended(code))
        return self._finish(False, reason, failed_task=task.name, exit_code=code,
                            last_lines=tuple(lines))

    def _finish_stopped(self, why: str, signum: int | None = None) -> JobResult:
        running = [t for t in self._tasks if t.running]
        reason = stopped_reason(why, running, self.primary)
        logger.error("%s: stopping every task", why)
        return self._finish(False, reason, still_running=tuple(t.name for t in running),
                            signal=signum)
