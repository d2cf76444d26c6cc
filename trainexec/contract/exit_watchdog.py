"""The last resort of a task's exit deadline: a watchdog outside the interpreter.

`trainexec.contract.exit_deadline` ends a task whose role is over but whose process
stays, from a thread of its own. That thread needs the interpreter's lock, and
TensorFlow's C++ shutdown can hold it for as long as it waits: a
MultiWorkerMirroredStrategy task's coordination service heartbeating towards a chief
that has left kept a worker alive 25 s and more past its deadline. So when the deadline
starts, `watch_from_outside` also starts a small process of its own (no TensorFlow, no
lock of this interpreter) that, if the task is still alive `secs` later, says so on the
task's stderr and ends it with SIGKILL.

The task then ends with 137, which TFJob's ExitCode policy retries. That is safe: the
task's role was over (its records written), so its restart finds training complete and
ends at once with 0 (a Keras task skips training before it builds its strategy when the
newest checkpoint is at `max_steps`; a ps or an evaluator sees the run over). Under
`trainexec launch` (`TRAINEXEC_LAUNCH_DIR` set) the watchdog first writes
`exits/<task_type>-<index>.json` there (the task, its pid and process group, the code
it was ending with), and the launcher counts that code for the run it names
(`take_outside_exit`) instead of a failure its restart budget (none by default) would
have to absorb. `trainexec slurm-exec` does the same through
`TRAINEXEC_EXIT_RECORD_DIR` (a directory of its own for its one command), so the task's
Slurm verdict is the code it was ending with, not 137, also when the command is a shell
that started the task. No code of this process can be chosen once its lock is held: a
signal handler of Python's needs it, and the kernel's SIGALRM would end it with 142,
which is retried the same way without saying why.

The watchdog follows the task by its pid and start time (a pid reused by another
process is never killed), leaves as soon as the task has ended, and stays in the
task's process group, so that whatever ends the task's group ends it too.

Example:
    ```python
    watch_from_outside(10.0, "worker:1", code=0)  # killed 10 s from now if still alive
    ```
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from typing import Mapping

from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV
from trainexec.records.layout import task_file_name

__all__ = ["EXITS_DIR", "RECORD_DIR_ENV", "WATCHDOG", "killed_by_watchdog", "start_time",
           "take_outside_exit", "watch_from_outside"]

EXITS_DIR = "exits"  # under TRAINEXEC_LAUNCH_DIR: what the watchdog ended, and how
# Where to record instead, for a starter of the task that is not the launcher
# (`trainexec slurm-exec`); it wins over TRAINEXEC_LAUNCH_DIR.
RECORD_DIR_ENV = "TRAINEXEC_EXIT_RECORD_DIR"

# The watchdog's program, run with `python -I -S -c` (nothing imported but the standard
# library): argv = pid, start time (clock ticks since boot), seconds, task name, and
# optionally the code the task was ending with and the record to write before the kill.
WATCHDOG = r"""
import json, os, signal, sys, time
pid, start, secs, task = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
code, record = (int(sys.argv[5]), sys.argv[6]) if len(sys.argv) > 6 else (None, "")
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
    told = False
    if record:  # before the kill: the launcher reads it once it sees the exit
        try:
            os.makedirs(os.path.dirname(record), exist_ok=True)
            with open(record + ".tmp", "w") as f:
                json.dump({"task": task, "pid": pid, "pgid": os.getpgid(pid),
                           "code": code}, f)
            os.replace(record + ".tmp", record)
            told = True
        except OSError:
            pass  # its starter then sees 137, retried: as without a launcher
    then = (f"the process that started it counts the exit code it was ending with "
            f"({code})" if told else "its restart finds training complete and ends at once")
    sys.stderr.write(
        f"[{task}] trainexec: {task} is still running {secs:.0f}s after its role was "
        f"over, its exit deadline unable to run (TensorFlow's shutdown holds the "
        f"interpreter): ending it (SIGKILL, exit 137); {then}\n")
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


def _record_path(launch_dir: str, task: str) -> str:
    return os.path.join(launch_dir, EXITS_DIR, task_file_name(task))


def watch_from_outside(secs: float, task: str, code: int = 0, pid: int | None = None,
                       environ: Mapping[str, str] | None = None
                       ) -> subprocess.Popen | None:
    """Starts the watchdog of `pid` (default: this process) for `secs`; None where
    /proc is missing (not Linux) or no process can be started. `code`: the code the
    task was ending with, recorded for a launcher (`TRAINEXEC_LAUNCH_DIR` in
    `environ`, or `TRAINEXEC_EXIT_RECORD_DIR`) before the kill."""
    pid = os.getpid() if pid is None else pid
    started = start_time(pid)
    if started is None:
        return None
    environ = os.environ if environ is None else environ
    record_dir = environ.get(RECORD_DIR_ENV) or environ.get(LAUNCH_DIR_ENV)
    report = [str(int(code)), _record_path(record_dir, task)] if record_dir else []
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WATCHDOG, str(pid), started, f"{secs:g}",
             task, *report], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            close_fds=True)
    except OSError:
        return None


def killed_by_watchdog(code: int | None) -> bool:
    """Whether an exit code, as `subprocess` gives it, can be a watchdog's SIGKILL: -9
    for the task's own interpreter, 137 for a shell that started it and passed it on."""
    return code in (-signal.SIGKILL, 128 + signal.SIGKILL)


def take_outside_exit(launch_dir: str | None, task: str, run_pid: int | None
                      ) -> int | None:
    """The code `task`'s run `run_pid` (the process the launcher started: the task's
    interpreter, or a shell that started it) was ending with when its watchdog killed
    it, or None: no launcher directory, no record, a record of another run or a
    malformed one. A record that answers is removed: it speaks of that run only."""
    if not launch_dir or run_pid is None:
        return None
    path = _record_path(launch_dir, task)
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or run_pid not in (record.get("pid"),
                                                       record.get("pgid")):
        return None
    code = record.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    with contextlib.suppress(OSError):
        os.remove(path)
    return code
