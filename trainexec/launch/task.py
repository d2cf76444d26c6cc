"""`Task`: one process of a local cluster, its runs and the output it printed.

A `LocalCluster` keeps one `Task` per TF_CONFIG task; a restart starts another
run of the same `Task`, with the same TF_CONFIG.
"""

from __future__ import annotations

import collections
import dataclasses
import subprocess
import threading
import types
from typing import Mapping

from trainexec.clock import Clock, SystemClock

__all__ = ["MAX_LINES", "TAIL_LINES", "Task", "TaskRun", "TaskSpec"]

MAX_LINES = 100_000  # lines kept in memory per task
TAIL_LINES = 20  # lines of a failed task shown in the failure reason


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """One task as planned, before anything runs (`spec.plan_job`, held by a
    `ClusterPlan`); a `LocalCluster` makes its `Task` from it (`Task.from_spec`).

    `command` and `env` are the task's own, when its role has them; `tf_config`
    None: it runs without TF_CONFIG (a one-task TFJob); `address` None: it is
    outside the cluster (the launcher's evaluator).
    """

    task_type: str
    index: int
    tf_config: str | None
    address: str | None
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))

    @property
    def name(self) -> str:
        return f"{self.task_type}:{self.index}"


@dataclasses.dataclass(eq=False)
class TaskRun:
    """The process of a task's current run; `processes` alone writes it (a stand-in
    for `processes` in tests).

    `proc` is the run's process (None before the first start); `reader` the thread
    pumping its output; `swept` is True once its process group is SIGKILLed and
    its leader reaped (its group id may then be another's: never signalled again).
    """

    proc: subprocess.Popen | None = None
    reader: threading.Thread | None = None
    swept: bool = False


@dataclasses.dataclass(eq=False)
class Task:
    """One process of the cluster (restarts reuse the same Task and TF_CONFIG).

    `command` and `env` are the task's own, when its role has them (a job read
    from a TFJob manifest); otherwise it runs the cluster's command.
    `returncode` is None while running (negative: killed by that signal; for a run
    its exit deadline's watchdog killed as it was ending, the supervisor puts the
    code the run was ending with in place of -9: `trainexec.contract.exit_watchdog`);
    `stopped` is True when the launcher stopped it; `pids` lists every run;
    `restarts` counts automatic and `LocalCluster.restart()` restarts (only
    automatic ones use up `max_restarts`); `lines_this_run` counts the lines
    the current run has printed (0 until it prints, again after a restart).
    `clock` gives `started_at`, `ended_at` and `run_secs` (the cluster's clock).

    Who writes what: `run` (the current run's process) is `processes`'s; the
    supervisor's are `crashes_restarted` (automatic restarts this task caused,
    charged against `max_restarts`) and `left` (it failed and the job goes on
    without it); the captured lines are written through `begin_run_output` and
    `add_line` only.
    """

    task_type: str
    index: int
    tf_config: str | None  # None: the task runs without TF_CONFIG (a one-task TFJob)
    address: str | None
    command: tuple[str, ...] = ()  # its own program and arguments; () runs the cluster's
    env: dict[str, str] = dataclasses.field(default_factory=dict)  # what it adds to os.environ
    returncode: int | None = None
    restarts: int = 0
    stopped: bool = False
    started_at: float | None = None  # clock.now() of the first run
    ended_at: float | None = None
    pids: list[int] = dataclasses.field(default_factory=list)
    lines_this_run: int = 0
    run: TaskRun = dataclasses.field(default_factory=TaskRun, repr=False)
    crashes_restarted: int = dataclasses.field(default=0, repr=False)  # restarts it caused
    left: bool = dataclasses.field(default=False, repr=False)  # failed; the job goes on
    _lines: collections.deque = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=MAX_LINES), repr=False)
    _lines_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)
    clock: Clock = dataclasses.field(default_factory=SystemClock, repr=False)  # its times'

    @classmethod
    def from_spec(cls, spec: TaskSpec, clock: Clock | None = None) -> "Task":
        """A task not started yet, as `spec` plans it, timed by `clock` (default:
        the system's)."""
        return cls(spec.task_type, spec.index, spec.tf_config, spec.address,
                   command=tuple(spec.command), env=dict(spec.env),
                   clock=clock or SystemClock())

    @property
    def name(self) -> str:
        return f"{self.task_type}:{self.index}"

    @property
    def pid(self) -> int | None:
        return self.run.proc.pid if self.run.proc is not None else None

    @property
    def running(self) -> bool:
        return self.run.proc is not None and self.returncode is None

    @property
    def run_secs(self) -> float:
        if self.started_at is None:
            return 0.0
        end = self.clock.now() if self.running or self.ended_at is None else self.ended_at
        return max(0.0, end - self.started_at)

    def begin_run_output(self) -> None:
        """A new run started (`run.proc` already set): `lines_this_run` counts from 0."""
        with self._lines_lock:
            self.lines_this_run = 0

    def add_line(self, line: str, proc: object) -> None:
        """Keeps a line run `proc` printed, counted in `lines_this_run` while `proc` is
        the current run's (not the tail of a run already replaced)."""
        with self._lines_lock:
            self._lines.append(line)
            if self.run.proc is proc:
                self.lines_this_run += 1

    def output_lines(self) -> list[str]:
        """Every line captured so far (stdout and stderr, all runs)."""
        with self._lines_lock:
            return list(self._lines)

    def tail(self, n: int = TAIL_LINES) -> list[str]:
        """The last `n` lines captured."""
        return self.output_lines()[-n:] if n > 0 else []
