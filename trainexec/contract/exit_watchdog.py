"""The last resort of a task's exit deadline: a watchdog outside the interpreter.

`trainexec.contract.exit_deadline` ends a task whose role is over but whose process
stays, from a thread of its own. That thread needs the interpreter's lock, and
TensorFlow's C++ shutdown can hold it for as long as it waits: a
MultiWorkerMirroredStrategy task's coordination service heartbeating towards a chief
that has left kept a worker alive 25 s and more past its deadline. So when the deadline
starts, `watch_from_outside` also starts a small process of its own (no TensorFlow, no
lock of this interpreter) that, if the task is still alive `secs` later, says so on the
task's stderr and ends it with SIGKILL.

The task then ends with 137, which TFJob's ExitCode policy and `trainexec launch`
retry. That is safe: the task's role was over (its records written), so its restart
finds training complete and ends at once with 0 (a Keras task skips training before it
builds its strategy when the newest checkpoint is at `max_steps`; a ps or an evaluator
sees the run over). No code of this process can be chosen once its lock is held: a
signal handler of Python's needs it, and the kernel's SIGALRM would end it with 142,
which is retried the same way without saying why.

The watchdog follows the task by its pid and start time (a pid reused by another
process is never killed), leaves as soon as the task has ended, and stays in the
task's process group, so that whatever ends the task's group ends it too.

Example:
    ```python
    watch_from_outside(10.0, "worker:1")   # killed 10 s from now if still alive
    ```
"""

from __future__ import annotations

import os
import subprocess
import sys

__all__ = ["WATCHDOG", "start_time", "watch_from_outside"]

# The watchdog's program, run with `python -I -S -c` (nothing imported but the standard
# library): argv = pid, start time (clock ticks since boot), seconds, task name.
WATCHDOG = r"""
import os, signal, sys, time
pid, start, secs, task = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
def alive():
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[19] == start and fields[0] not in ("Z", "X")
deadline = time.monotonic() + secs
while time.monotonic() < deadline:
    if not alive():
        sys.exit(0)
    time.sleep(0.2)
if alive():
    sys.stderr.write(
        f"[{task}] trainexec: {task} is still running {secs:.0f}s after its role was "
        f"over, its exit deadline unable to run (TensorFlow's shutdown holds the "
        f"interpreter): ending it (SIGKILL, exit 137); its restart finds training "
        f"complete and ends at once\n")
    sys.stderr.flush()
    os.kill(pid, signal.SIGKILL)
"""


def start_time(pid: int) -> str | None:
    """The process' start time (field 22 of /proc/<pid>/stat), None off Linux."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def watch_from_outside(secs: float, task: str, pid: int | None = None
                       ) -> subprocess.Popen | None:
    """Starts the watchdog of `pid` (default: this process) for `secs`; None where
    /proc is missing (not Linux) or no process can be started."""
    pid = os.getpid() if pid is None else pid
    started = start_time(pid)
    if started is None:
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WATCHDOG, str(pid), started, f"{secs:g}",
             task], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, close_fds=True)
    except OSError:
        return None
