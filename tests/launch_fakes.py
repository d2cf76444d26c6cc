"""Fakes for the launcher's supervision loop: a clock and task processes that exist
only as scripted exits (no process, no TensorFlow; tests/test_launch_supervisor_table.py).
"""

from __future__ import annotations

import dataclasses
import signal
from typing import Sequence

from trainexec.launch.task import Task

__all__ = ["Exit", "FakeClock", "FakeProcesses", "RUNS"]

RUNS = None  # a run that runs until stopped


class FakeClock:
    """Time that moves only when someone sleeps."""

    def __init__(self, start: float = 0.0) -> None:
        self.time = start

    def now(self) -> float:
        return self.time

    def sleep(self, secs: float) -> None:
        assert secs >= 0, secs
        self.time += secs


@dataclasses.dataclass(frozen=True)
class Exit:
    """One run of a task: it exits with `code` `after` seconds; `ignores_term`: a
    SIGTERM does not end it (the launcher's SIGKILL after the grace does)."""

    after: float
    code: int
    ignores_term: bool = False


@dataclasses.dataclass(frozen=True)
class _Proc:
    pid: int


class FakeProcesses:
    """`supervisor.TaskProcesses` over scripted runs, writing a timeline.

    `script` gives each task's runs in order (`Exit`, or `RUNS` for one that runs
    until stopped; a task runs until stopped once its script is used up). It
    does what `LocalCluster` and `processes` do with a task's state: a new run
    clears the last one's exit; a stop SIGTERMs each running task (it ends with
    -15 unless it ignores SIGTERM) and SIGKILLs what still runs after the grace
    (the clock moves on by the grace), the launcher's stop marking them stopped.

    `timeline` holds "<secs> <what>" lines: `start T`, `exit T CODE` (the exit
    seen), `stop T,U grace G` (a stop of the tasks still running among those
    asked), `SIGTERM T`, `SIGKILL T`, `stop_all`.
    """

    def __init__(self, clock: FakeClock, tasks: Sequence[Task],
                 script: dict[str, Sequence[Exit | None]], grace_secs: float) -> None:
        self.clock, self.tasks, self.grace_secs = clock, list(tasks), grace_secs
        self.script = {name: list(runs) for name, runs in script.items()}
        self.timeline: list[str] = []
        self._runs: dict[str, tuple[float, Exit | None]] = {}
        self._pids = 100

    def _log(self, what: str) -> None:
        self.timeline.append(f"{self.clock.now():g} {what}")

    # -- TaskProcesses -----------------------------------------------------------------
    def spawn(self, task: Task) -> None:
        if task.run.proc is not None:
            self.sweep(task)  # as LocalCluster._spawn: the last run's group first
        runs = self.script.get(task.name, [])
        run = runs.pop(0) if runs else RUNS
        self._pids += 1
        task.run.proc, task.returncode, task.stopped, task.ended_at = (
            _Proc(self._pids), None, False, None)
        task.run.swept = False
        task.begin_run_output()
        task.pids.append(self._pids)
        if task.started_at is None:
            task.started_at = self.clock.now()
        self._runs[task.name] = (self.clock.now(), run)
        self._log(f"start {task.name}")

    def poll(self, task: Task) -> int | None:
        if task.returncode is None:
            started, run = self._runs[task.name]
            if run is not None and self.clock.now() >= started + run.after:
                self._end(task, run.code)
                self._log(f"exit {task.name} {run.code}")
        return task.returncode

    def join_output(self, task: Task) -> None:
        pass

    def stop(self, tasks: Sequence[Task], grace: float) -> None:
        live = [t for t in tasks
                if t.run.proc is not None and not t.run.swept and self.poll(t) is None]
        if live:
            self._log(f"stop {','.join(t.name for t in live)} grace {grace:g}")
        for task in live:
            task.stopped = True
            if grace > 0:
                self._log(f"SIGTERM {task.name}")
                if not self._runs[task.name][1] or not self._runs[task.name][1].ignores_term:
                    self._end(task, -signal.SIGTERM)
        if grace > 0 and any(t.returncode is None for t in live):
            self.clock.sleep(grace)
        for task in tasks:
            self.sweep(task)

    def sweep(self, task: Task) -> None:
        if task.run.proc is None or task.run.swept:
            return
        if task.returncode is None:
            self._log(f"SIGKILL {task.name}")
            self._end(task, -signal.SIGKILL)
        task.run.swept = True

    def stop_all(self) -> None:
        self._log("stop_all")
        self.stop(self.tasks, self.grace_secs)

    # ----------------------------------------------------------------------------------
    def _end(self, task: Task, code: int) -> None:
        task.returncode, task.ended_at = code, self.clock.now()
