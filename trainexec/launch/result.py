"""How a launched job ended: `TaskOutcome` per task, `JobResult`, and the texts for exits.

`LocalCluster.wait()` returns a `JobResult`; `JobResult.summary()` is the table
`trainexec launch` prints, one `TaskOutcome` row per task (in a job type of
more than `COLLAPSE_OVER` tasks, those that ended alike share a row, e.g.
`worker:0-63`, and each failed task keeps its own), then what to look at next:
the evaluator's last metrics, the export paths and the `tensorboard --logdir`
command, from the status records tasks left (`trainexec.contract.task_status`).
"""

from __future__ import annotations

import collections
import dataclasses
import shlex
import signal
from typing import Any, Iterable, Mapping, Sequence

from trainexec.contract.exit_codes import ExitCodes
from trainexec.launch.task import TAIL_LINES, Task

__all__ = ["COLLAPSE_OVER", "JobResult", "TaskOutcome", "crowded_types", "exit_text",
           "failure_reason", "how_it_ended", "name_tasks", "next_steps", "signal_name",
           "stopped_reason"]

# A job type with more tasks than this shows the tasks that ended alike as one row.
COLLAPSE_OVER = 8
# Up to this many task names are listed one by one ("chief:0 and worker:0 and ...").
_LISTED = 4


def _ranges(indices: Sequence[int]) -> str:
    """`0-5,7,9-63` for sorted indices."""
    parts, start = [], None
    for i, index in enumerate(indices):
        if start is None:
            start = index
        if i + 1 == len(indices) or indices[i + 1] != index + 1:
            parts.append(str(start) if start == index else f"{start}-{index}")
            start = None
    return ",".join(parts)


def _by_type(names: Sequence[str]) -> list[tuple[str, list[int]]]:
    groups: dict[str, list[int]] = {}
    for name in names:
        task_type, _, index = name.partition(":")
        groups.setdefault(task_type, []).append(int(index) if index.isdigit() else 0)
    return [(task_type, sorted(indices)) for task_type, indices in groups.items()]


def crowded_types(names: Iterable[str]) -> frozenset[str]:
    """The job types with more than `COLLAPSE_OVER` of the tasks `names`: in
    the closing table and the live view, their tasks that stand alike share a
    row."""
    counts = collections.Counter(name.partition(":")[0] for name in names)
    return frozenset(task_type for task_type, n in counts.items() if n > COLLAPSE_OVER)


def name_tasks(names: Sequence[str]) -> str:
    """Task names for a sentence: `chief:0 and worker:0` for a few, and for many
    one range per job type: `chief:0, worker:0-63 and evaluator:0`."""
    names = list(names)
    if len(names) <= _LISTED:
        return " and ".join(names)
    parts = [f"{task_type}:{_ranges(indices)}" for task_type, indices in _by_type(names)]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


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
    code = task.returncode
    assert code is not None, f"{task.name} has ended: it failed"
    how = how_it_ended(code)
    lines = task.tail(TAIL_LINES)
    if code > 0:
        meaning = codes.describe(code)
        if code < 128 and not ended_by_trainexec(task.name, code, lines):
            meaning = ("the program's own code, not trainexec's (no line says the task "
                       f"exits {code}: see its last lines; under trainexec's "
                       f"codes it would read: {meaning})")
        how = f"{how}: {meaning}"
    if permanent_under is not None:
        budget = f"not restarted: restart policy {permanent_under}"
    else:
        budget = (f"after {task.crashes_restarted} restart(s), none left" if max_restarts
                  else "no restarts allowed")
    shown = "\n".join(f"    {line}" for line in lines) or "    (no output)"
    reason = f"{task.name} {how} ({budget})\n  last {len(lines)} lines of {task.name}:\n{shown}"
    return reason, lines


def ended_by_trainexec(task: str, code: int, lines: Sequence[str]) -> bool:
    """Whether trainexec ended `task` with `code`: its exit hook says so last
    (`trainexec.contract.exit_codes.install_exit_hook`: "worker:0 exits 2: ..."). A code
    below 128 without that line is the program's own: Python's 2 for a file it cannot
    open, say, which is not trainexec's "configuration is wrong"."""
    said = f"{task} exits {code}: "
    return any(said in line for line in lines)


def stopped_reason(why: str, running: Sequence[Task], primary: Sequence[str]) -> str:
    """Why the job was stopped (`why`), what still ran, and the primaries' last lines."""
    names = (", ".join(t.name for t in running) if len(running) <= _LISTED
             else name_tasks([t.name for t in running]).replace(" and ", ", "))
    names = names or "none"
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
    """The outcome of `LocalCluster.wait()`.

    Attributes:
      ok: the job succeeded: the tasks it waited for exited 0.
      reason: why it ended, in words; for a failure, the failed task's exit and
        its last lines.
      failed_task: the task that failed for good ("worker:1"), or None.
      exit_code: that task's exit code (negative: killed by that signal).
      last_lines: that task's last output lines.
      still_running: the tasks that had to be stopped (a timeout, an interrupt).
      signal: the signal that interrupted the launcher (SIGINT, SIGTERM), or None.
      tasks: one `TaskOutcome` per task: exit, restarts, run time.
      elapsed_secs: the job's wall time.
      restarts: automatic restarts, one per fault (a group restart counts once).
      reports: the status records the tasks left (`trainexec.contract.task_status`), by
        task name: the chief's progress, the evaluator's last metrics and exports.
    """

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
    # The status records tasks left (`trainexec.contract.task_status`), by task name.
    reports: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def exit_status(self) -> int:
        """The launcher's exit code: 0 ok, 128+signal when interrupted, else 1."""
        if self.ok:
            return 0
        return 128 + self.signal if self.signal else 1

    def summary(self) -> str:
        """A table: one row per task (or per tasks that ended alike, in a large
        job type) with its exit code, restarts and run time; the job's outcome;
        then what to look at next (`next_steps`)."""
        rows = [("task", "address", "exit", "restarts", "secs"), *_rows(self.tasks)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                 for row in rows]
        status = "succeeded" if self.ok else "FAILED"
        lines.append(f"job {status} in {self.elapsed_secs:.1f}s: {self.reason.splitlines()[0]}")
        return "\n".join(lines + next_steps(self.reports))


def _rows(tasks: Sequence[TaskOutcome]) -> list[tuple[str, ...]]:
    """One row per task; in a job type of more than `COLLAPSE_OVER` tasks, the
    tasks that exited 0 or were stopped, with the same restarts, share one."""
    crowded = crowded_types(task.name for task in tasks)
    # A row is a task, or (job type, exit, restarts) of the tasks merged into it.
    rows: list[TaskOutcome | tuple[str, str, int]] = []
    merged: dict[tuple[str, str, int], list[TaskOutcome]] = {}
    for task in tasks:
        task_type = task.name.partition(":")[0]
        if task_type in crowded and task.exit in ("0", "stopped"):
            key = (task_type, task.exit, task.restarts)
            if key not in merged:
                merged[key] = []
                rows.append(key)
            merged[key].append(task)
        else:
            rows.append(task)
    table: list[tuple[str, ...]] = []
    for row in rows:
        if isinstance(row, TaskOutcome):
            table.append((row.name, row.address or "-", row.exit, str(row.restarts),
                          f"{row.run_secs:.1f}"))
            continue
        group = merged[row]
        indices = sorted(int(t.name.partition(":")[2]) for t in group)
        secs = [t.run_secs for t in group]
        table.append((f"{row[0]}:{_ranges(indices)} ({len(group)} tasks)", "-", row[1],
                      str(row[2]), f"{min(secs):.1f}-{max(secs):.1f}"))
    return table


def _metrics_text(metrics: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} = {value:.4g}" if isinstance(value, (int, float))
                     else f"{name} = {value}" for name, value in sorted(metrics.items())
                     if name != "global_step")


def next_steps(reports: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What to look at after the job, from the tasks' status records: the last
    evaluation's metrics, the exports, and the TensorBoard command."""
    lines: list[str] = []
    model_dirs: list[str] = []
    for task, record in reports.items():
        if record.get("model_dir") and record["model_dir"] not in model_dirs:
            model_dirs.append(str(record["model_dir"]))
        if record.get("kind") != "evaluation" or not record.get("metrics"):
            continue
        final = "final evaluation" if record.get("final") else "last evaluation"
        lines.append(f"{final} ({task}, step {record.get('step')}): "
                     f"{_metrics_text(record['metrics'])}")
        lines += [f"exported: {path}" for path in record.get("exports") or [] if path]
    lines += [f"tensorboard --logdir {shlex.quote(path)}" for path in model_dirs]
    return lines
