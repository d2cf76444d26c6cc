"""How a launched job ended: `TaskOutcome` per task, `JobResult`, and the texts for exits.

`LocalCluster.wait()` returns a `JobResult`; `JobResult.summary()` is the table
`trainexec launch` prints, one `TaskOutcome` row per task.
"""

from __future__ import annotations

import dataclasses
import signal
from typing import Sequence

from trainexec.exit_codes import ExitCodes
from trainexec.launch.task import TAIL_LINES, Task

__all__ = ["JobResult", "TaskOutcome", "exit_text", "failure_reason", "how_it_ended",
           "signal_name", "stopped_reason"]


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def how_it_ended(code: int) -> str:
    return (f"was killed by {signal_name(-code)}" if code < 0
            else f"failed with exit code {code}")


def exit_text(code: int | None, stopped: bool = False) -> str:
    """"stopped", "running", "SIGKILL" or the exit code as text."""
    if stopped:
        return "stopped"
    if code is None:
        return "running"
    return signal_name(-code) if code < 0 else str(code)


def failure_reason(task: Task, max_restarts: int, codes: ExitCodes | None = None,
                   permanent_under: str | None = None) -> tuple[str, list[str]]:
    """Why the job failed when `task` failed for good: the reason, with the task's
    last lines, and those lines. `permanent_under`: the restart policy that does
    not restart this exit (None: the restarts ran out)."""
    codes = codes or ExitCodes()
    how = how_it_ended(task.returncode)
    if task.returncode is not None and task.returncode > 0:
        how = f"{how}: {codes.describe(task.returncode)}"
    if permanent_under is not None:
        budget = f"not restarted: restart policy {permanent_under}"
    else:
        budget = (f"after {task._crashes_restarted} restart(s), none left" if max_restarts
                  else "no restarts allowed")
    lines = task.tail(TAIL_LINES)
    shown = "\n".join(f"    {line}" for line in lines) or "    (no output)"
    reason = f"{task.name} {how} ({budget})\n  last {len(lines)} lines of {task.name}:\n{shown}"
    return reason, lines


def stopped_reason(why: str, running: Sequence[Task], primary: Sequence[str]) -> str:
    """Why the job was stopped (`why`), what still ran, and the primaries' last lines."""
    names = ", ".join(t.name for t in running) or "none"
    reason = f"{why}; still running: {names}"
    for task in running:
        last = task.tail(5) if task.name in primary else []
        if last:
            reason += f"\n  {task.name} last lines:\n" + "\n".join(
                f"    {line}" for line in last)
    return reason


@dataclasses.dataclass(frozen=True)
class TaskOutcome:
    """How one task ended: a row of `JobResult.summary()`."""

    name: str
    address: str | None
    returncode: int | None
    stopped: bool
    restarts: int
    run_secs: float

    @property
    def exit(self) -> str:
        return exit_text(self.returncode, self.stopped)


@dataclasses.dataclass(frozen=True)
class JobResult:
    """The outcome of `LocalCluster.wait()`."""

    ok: bool
    reason: str
    failed_task: str | None = None
    exit_code: int | None = None  # of the failed task
    last_lines: tuple[str, ...] = ()  # of the failed task
    still_running: tuple[str, ...] = ()  # tasks we had to stop on timeout/interrupt
    signal: int | None = None  # set when interrupted by SIGINT/SIGTERM
    tasks: tuple[TaskOutcome, ...] = ()
    elapsed_secs: float = 0.0
    restarts: int = 0  # automatic restarts, one per fault (a group restart counts once)

    @property
    def exit_status(self) -> int:
        """The launcher's exit code: 0 ok, 128+signal when interrupted, else 1."""
        if self.ok:
            return 0
        return 128 + self.signal if self.signal else 1

    def summary(self) -> str:
        """A table: one row per task with its exit code, restarts and run time."""
        rows = [("task", "address", "exit", "restarts", "secs")]
        rows += [(t.name, t.address or "-", t.exit, str(t.restarts), f"{t.run_secs:.1f}")
                 for t in self.tasks]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                 for row in rows]
        status = "succeeded" if self.ok else "FAILED"
        lines.append(f"job {status} in {self.elapsed_secs:.1f}s: {self.reason.splitlines()[0]}")
        return "\n".join(lines)
