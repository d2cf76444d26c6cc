"""The live status block `trainexec launch` keeps below the streamed logs, on a terminal.

One block, redrawn at most once a second (`StatusView`), says at a glance where
each task is: its state (`starting`, `running`, `restarting 1/3`, `exited 0`,
`killed by SIGKILL`, `stopped`), the chief's step, rate and time left, and the
evaluator's last metrics. The task facts come from the launcher's `Task`s; how
far a task is comes from the status records it writes into the launch
directory (`trainexec.contract.task_status`: the `KerasTrainer` chief and every
trainexec evaluator do). A task that writes none, as in a hand-written job,
shows its process state only.

The block only exists on a terminal: the CLI turns it on when stdout and
stderr are the same terminal (`same_terminal`) and `--no-status` is not
given. Each log line is written above it (the block is erased, the line
written, the block drawn again), so the logs stay exactly the lines the tasks
printed. From `start()` to `close()` the launcher's own log records (the root
logger's) and whatever it writes to `sys.stderr` go above the block too, to
the same terminal; `close()` puts the previous handlers and `sys.stderr`
back. Off a terminal nothing here runs and the output is the logs alone, with
no control characters.

`display_state` and `render_block` are pure; `StatusView` draws.

Example:
    ```python
    view = StatusView(sys.stdout, lambda: cluster.tasks, lambda: cluster.launch_dir,
                      max_restarts=3)
    cluster.output = view          # log lines go above the block
    view.start()                   # log records and stderr above the block, too
    ...
    view.close()                   # erases the block, gives logging and stderr back
    ```
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import sys
import threading
import time
from typing import Any, Callable, Mapping, Sequence, TextIO

from trainexec.formatting import format_rate, format_secs
from trainexec.launch.result import crowded_types, exit_text, name_tasks
from trainexec.launch.task import Task
from trainexec.contract.task_status import EVALUATION, TRAINING, read_statuses

__all__ = ["LOG_FORMAT", "REFRESH_SECS", "StatusView", "display_state", "render_block",
           "same_terminal"]

LOG_FORMAT = "[launch] %(message)s"  # the launcher's own log records

REFRESH_SECS = 1.0  # at most one redraw of the block's content per second

_UP_AND_CLEAR = "\x1b[{n}F\x1b[J"  # to the start of the line n up, clear to the end


def same_terminal(stdout: Any, stderr: Any) -> bool:
    """True when `stdout` and `stderr` are both the same terminal: only then can
    the block stay below everything the launcher prints (a `2>file` keeps its
    own output, and nothing erases lines it did not count)."""
    try:
        if not (stdout.isatty() and stderr.isatty()):
            return False
        out, err = os.fstat(stdout.fileno()), os.fstat(stderr.fileno())
    except (AttributeError, OSError, ValueError):  # not a real file (closed, replaced)
        return False
    return (out.st_dev, out.st_ino, out.st_rdev) == (err.st_dev, err.st_ino, err.st_rdev)


def display_state(task: Task, max_restarts: int) -> str:
    """What the block says of `task`: `starting` (its current run has printed
    nothing yet), `restarting n/m` (the same, after a restart), `running`,
    `exited <code>`, `killed by SIG...`, `stopped` (pure; the supervisor's
    policy has its own states, `trainexec.launch.supervisor.task_state`)."""
    if task.pid is None:
        return "starting"
    if task.running:
        if not task.lines_this_run:
            return (f"restarting {task.restarts}/{max_restarts}" if task.restarts
                    else "starting")
        return f"running (restarts {task.restarts}/{max_restarts})" if task.restarts \
            else "running"
    if task.stopped:
        return "stopped"
    code = task.returncode
    return f"killed by {exit_text(code)}" if code is not None and code < 0 \
        else f"exited {code}"


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) and math.isfinite(value) \
        else str(value)


def _metrics(metrics: Any) -> str:
    if not isinstance(metrics, Mapping):
        return ""
    return ", ".join(f"{name} {_number(value)}" for name, value in sorted(metrics.items()))


def _progress(record: Mapping[str, Any] | None) -> str:
    """What a status record says about how far its task is."""
    if not record:
        return ""
    if record.get("kind") == TRAINING:
        parts = [f"step {record.get('step')}/{record.get('max_steps')}"]
        rate = record.get("steps_per_sec")
        if isinstance(rate, (int, float)):
            parts.append(f"{format_rate(rate)} steps/s")
        if record.get("step") is not None and record.get("step") == record.get("max_steps"):
            parts.append("done")
        elif record.get("secs_left") is not None:
            parts.append(f"{format_secs(record.get('secs_left'))} left")
        metrics = _metrics(record.get("metrics"))
        return "  ".join(parts + ([metrics] if metrics else []))
    if record.get("kind") == EVALUATION:
        label = "final" if record.get("final") else "evaluated"
        return f"{label} step {record.get('step')}: {_metrics(record.get('metrics'))}"
    return ""


def render_block(states: Sequence[tuple[str, str]], records: Mapping[str, Mapping],
                 elapsed_secs: float, width: int) -> list[str]:
    """The block's lines (pure): a header, then one line per task (`states`:
    name and state, in order) with what its status record says; in a job type
    of more than `COLLAPSE_OVER` tasks, tasks in the same state without a
    record share a line. Each line is cut to `width` - 1 characters so that
    none wraps (the block is erased by counting lines)."""
    crowded = crowded_types(name for name, _ in states)
    rows: list[tuple[str, str, str]] = []
    grouped: dict[tuple[str, str], list[str]] = {}
    for name, state in states:
        task_type = name.partition(":")[0]
        if task_type in crowded and not records.get(name):
            key = (task_type, state)
            if key not in grouped:
                grouped[key] = []
                rows.append(("", task_type, state))
            grouped[key].append(name)
        else:
            rows.append((name, state, _progress(records.get(name))))
    table = []
    for row in rows:
        if row[0]:
            table.append(row)
            continue
        names = grouped[(row[1], row[2])]
        label = name_tasks(names) if len(names) > 1 else names[0]
        table.append((label, row[2], f"({len(names)} tasks)" if len(names) > 1 else ""))
    name_width = max([len(r[0]) for r in table] + [4])
    state_width = max([len(r[1]) for r in table] + [5])
    count = f"{len(states)} task" + ("" if len(states) == 1 else "s")
    header = f"-- trainexec launch: {count}, {format_secs(elapsed_secs)} --"
    lines = [header] + [f"{n.ljust(name_width)}  {s.ljust(state_width)}  {p}".rstrip()
                        for n, s, p in table]
    limit = max(width - 1, 10)
    return [line if len(line) <= limit else line[:limit - 3] + "..." for line in lines]


class StatusView:
    """Draws the block on `stream` (a terminal) and writes log lines above it.

    Used as the cluster's `output` (called with each line); `start()` redraws
    the block every `REFRESH_SECS`, `close()` erases it. `logging_stream` is a
    file-like for the launcher's own log records, so they go above it too.
    """

    def __init__(self, stream: TextIO, tasks: Callable[[], Sequence[Task]],
                 launch_dir: Callable[[], str | None], max_restarts: int,
                 width: Callable[[], int] | None = None,
                 now: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._tasks = tasks
        self._launch_dir = launch_dir
        self._max_restarts = max_restarts
        self._width = width or (lambda: shutil.get_terminal_size((100, 24)).columns)
        self._now = now
        self._started_at = now()
        self._lock = threading.Lock()
        self._block: list[str] = []
        self._drawn = 0  # lines of the block on the screen
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.logging_stream = _LineStream(self, stream)
        self._given_back: tuple[list[logging.Handler], Any] | None = None

    # -- what the block says ---------------------------------------------------------------
    def _states(self) -> list[tuple[str, str]]:
        return [(task.name, display_state(task, self._max_restarts)) for task in self._tasks()]

    def render(self) -> list[str]:
        states = self._states()
        records = read_statuses(self._launch_dir(), [name for name, _ in states])
        return render_block(states, records, self._now() - self._started_at, self._width())

    # -- drawing ---------------------------------------------------------------------------
    def _erase(self) -> None:
        if self._drawn:
            self._stream.write(_UP_AND_CLEAR.format(n=self._drawn))
            self._drawn = 0

    def _draw(self) -> None:
        if self._block and not self._stop.is_set():
            self._stream.write("".join(line + "\n" for line in self._block))
            self._drawn = len(self._block)

    def __call__(self, line: str) -> None:
        self.write_line(line)

    def write_line(self, line: str) -> None:
        """Writes a log line above the block."""
        with self._lock:
            self._erase()
            self._stream.write(line + "\n")
            self._draw()
            self._stream.flush()

    def refresh(self) -> None:
        """Renders the block again and draws it."""
        block = self.render()
        with self._lock:
            self._erase()
            self._block = block
            self._draw()
            self._stream.flush()

    def start(self) -> "StatusView":
        """Draws the block and redraws it every `REFRESH_SECS`; until `close()`,
        the root logger's records (in `LOG_FORMAT`) and `sys.stderr` writes go
        above it."""
        self._take_logs()
        self.refresh()
        self._thread = threading.Thread(target=self._run, name="trainexec-status",
                                        daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(REFRESH_SECS):
            try:
                self.refresh()
            except Exception:  # the view must never take the launcher down
                pass

    def close(self) -> None:
        """Stops redrawing and erases the block; the logs above it stay."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(REFRESH_SECS + 1)
        with self._lock:
            self._erase()
            self._block = []
            self._stream.flush()
        self._give_logs_back()

    def _take_logs(self) -> None:
        root = logging.getLogger()
        self._given_back = (list(root.handlers), sys.stderr)
        handler = logging.StreamHandler(self.logging_stream)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        for previous in root.handlers:
            root.removeHandler(previous)
        root.addHandler(handler)
        sys.stderr = self.logging_stream

    def _give_logs_back(self) -> None:
        if self._given_back is None:
            return
        handlers, stderr = self._given_back
        self._given_back = None
        self.logging_stream.write("\n" if self.logging_stream.pending() else "")
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        if sys.stderr is self.logging_stream:
            sys.stderr = stderr


class _LineStream:
    """A file-like for `logging.StreamHandler` and `sys.stderr`: whole lines go
    above the block (on `terminal`, which also stands for it as a file)."""

    def __init__(self, view: StatusView, terminal: TextIO) -> None:
        self._view = view
        self._terminal = terminal
        self._partial = ""

    @property
    def encoding(self) -> str:
        return getattr(self._terminal, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        return self._terminal.isatty()

    def fileno(self) -> int:
        return self._terminal.fileno()

    def pending(self) -> bool:
        """Whether a line was begun and not ended."""
        return bool(self._partial)

    def write(self, text: str) -> int:
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            self._view.write_line(line)
        return len(text)

    def flush(self) -> None:
        pass
