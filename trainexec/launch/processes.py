"""A task's processes: start, output, exits seen without reaping, group signals, reaping.

What dies with the launcher: each task runs in its own session, and a task is
stopped by SIGKILL to its whole process group after SIGTERM and the grace, so
every process it started that stayed in its group dies with it. A crashed
task's group is killed before the task is restarted; the group of a task that
exited 0 is killed when the job ends. If the launcher itself dies, even by
SIGKILL, the orphan reaper (`trainexec.launch.orphan_reaper`) SIGKILLs every task
group not yet killed, and on Linux the kernel also SIGKILLs each task
(PR_SET_PDEATHSIG, set in the task before exec, tied to the thread that forked
it: hence one forking thread). Not covered: a process that leaves its task's
group (setsid or setpgid, as a daemon does); the grandchildren of a task if the
launcher and the orphan reaper are both killed (the tasks still die on Linux); a task
that execs a set-user-ID program loses the parent-death signal (the reaper
still kills its group).

Process group ids: a group is signalled only while its leader (the task's
process) is the launcher's unreaped child, alive or a zombie, so its id cannot
have been given to another process; exits are seen without reaping
(os.waitid with WNOWAIT) and the leader is reaped right after its group's
SIGKILL (without os.waitid, as on macOS before Python 3.13, an exit is seen by
reaping, and that group is then left alone rather than risk it). The reaper,
acting after the launcher is gone, signals groups within moments of the tasks'
deaths; reusing one of those ids so soon would take the kernel cycling through
its whole pid range.
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
from typing import Any, Callable, Mapping, Sequence, TextIO, Union, cast

from trainexec.clock import Clock, SystemClock
from trainexec.launch import orphan_reaper
from trainexec.launch.task import Task

__all__ = ["FORKING_THREAD", "ForkingThread", "Output", "die_with_parent", "exit_code",
           "join_reader", "killpg", "load_prctl", "poll", "pump", "signal_group", "start",
           "stop_tasks", "sweep", "write_line"]

# The launcher's records keep the one logger name they had before the split.
logger = logging.getLogger("trainexec.launch")

Output = Union[TextIO, Callable[[str], Any]]

_READER_JOIN_SECS = 1.0  # a grandchild may hold the pipe open after its parent exits
_POLL_SECS = 0.02  # how often stop_tasks looks whether the tasks ended
_OUTPUT_LOCK = threading.Lock()  # one line at a time, across clusters and threads


def exit_code(proc: subprocess.Popen) -> int | None:
    """`proc`'s exit code once it has ended (negative: killed by that signal), or None.

    Unlike `Popen.poll()` this does not reap it: until it is reaped its pid, which
    is also its process group's id, cannot be given to another process, so the
    group can still be signalled safely (see `sweep`).
    """
    if proc.returncode is not None:
        return proc.returncode
    if not hasattr(os, "waitid") or not hasattr(os, "WNOWAIT"):  # macOS before 3.13
        return proc.poll()
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped behind our back (SIGCHLD ignored, waitpid(-1))
        return proc.poll()  # sets returncode, so the group is never signalled again
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def load_prctl() -> Callable[..., int] | None:
    """libc's prctl(2) on Linux; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    prctl.restype = ctypes.c_int
    return prctl


def die_with_parent(prctl: Callable[..., int], parent_pid: int) -> Callable[[], None]:
    """A Popen `preexec_fn` asking the kernel to SIGKILL the child when its parent
    ends. The kernel ties this to the parent *thread* that forked, hence
    `ForkingThread`; it survives exec, except of set-user-ID programs."""
    kill = int(signal.SIGKILL)

    def preexec() -> None:  # in the child between fork and exec: no locks, no logging
        if prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent_pid:  # the launcher died before prctl took effect
            os.kill(os.getpid(), kill)

    return preexec


@dataclasses.dataclass(eq=False)
class _Call:
    fn: Callable[[], Any]
    value: Any = None
    error: BaseException | None = None
    done: threading.Event = dataclasses.field(default_factory=threading.Event)


class ForkingThread:
    """Starts every task from one daemon thread that lives as long as the process.

    A task's parent-death signal fires when the thread that forked it ends, so a
    task started by a short-lived thread (a `start()` or `restart()` in a worker
    thread, a `wait()` restarting a task) must not be forked by that thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: queue.SimpleQueue | None = None
        self._pid = 0

    def run(self, fn: Callable[[], Any]) -> Any:
        """Runs `fn` on the forking thread and returns its result (or raises its error)."""
        with self._lock:
            calls = self._calls
            # First use, or in a forked copy of this process (which has no queue).
            if calls is None or self._pid != os.getpid():
                calls = self._calls = queue.SimpleQueue()
                threading.Thread(target=self._serve, args=(calls,),
                                 name="trainexec-fork", daemon=True).start()
                self._pid = os.getpid()
        call = _Call(fn)
        calls.put(call)
        interrupted = None
        while not call.done.is_set():
            try:
                call.done.wait()
            except BaseException as exc:  # Ctrl-C: let the task start (and be tracked) first
                interrupted = exc
        if interrupted is not None:
            raise interrupted
        if call.error is not None:
            raise call.error
        return call.value

    def _after_fork_in_child(self) -> None:
        self._lock, self._calls, self._pid = threading.Lock(), None, 0

    @staticmethod
    def _serve(calls: queue.SimpleQueue) -> None:
        while True:
            call = calls.get()
            try:
                call.value = call.fn()
            except BaseException as exc:  # handed to the caller
                call.error = exc
            finally:
                call.done.set()


FORKING_THREAD = ForkingThread()


def _after_fork_in_child() -> None:
    """A forked copy of the launcher owns neither its forking thread nor its orphan reapers."""
    FORKING_THREAD._after_fork_in_child()
    orphan_reaper.after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# -- one run of a task: start it, pump its output -----------------------------------------
def start(task: Task, command: Sequence[str], env: Mapping[str, str],
          preexec: Callable[[], None] | None, reaper: orphan_reaper.OrphanReaper,
          write: Callable[[str], None]) -> subprocess.Popen:
    """Starts a run of `task` in its own session, from the forking thread; the task
    is tracked (its pid, the orphan reaper, an output reader calling `write`) at once."""

    def run() -> subprocess.Popen:  # on the forking thread; tracks the task at once
        proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=preexec)
        task.run.proc, task.returncode, task.stopped, task.ended_at = proc, None, False, None
        task.run.swept = False
        task.begin_run_output()
        task.pids.append(proc.pid)
        reaper.add(proc.pid)
        task.run.reader = threading.Thread(target=pump, args=(task, proc, write),
                                           name=f"launch-{task.name}", daemon=True)
        task.run.reader.start()
        return proc

    return FORKING_THREAD.run(run)


def pump(task: Task, proc: subprocess.Popen, write: Callable[[str], None]) -> None:
    """Keeps every line of run `proc`'s output in `task` (counted in
    `task.lines_this_run` while it is the task's current run) and writes it
    prefixed with the task name."""
    prefix = f"[{task.name}] "
    assert proc.stdout is not None, "started with stdout=PIPE (`start`)"
    with proc.stdout as stream:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            task.add_line(line, proc)  # counted unless the tail of a run already replaced
            write(prefix + line)


def write_line(output: Output | None, line: str) -> None:
    """Writes one line to `output` (a file-like or a callable; None: sys.stdout)."""
    out = output if output is not None else sys.stdout
    with _OUTPUT_LOCK:
        try:
            if hasattr(out, "write"):  # a file-like object (else a callable)
                stream = cast(TextIO, out)
                stream.write(line + "\n")
                stream.flush()
            else:
                out(line)
        except Exception:  # a broken sink must not stop the pipe being drained
            logger.debug("could not write output line", exc_info=True)


# -- exits, signals, reaping --------------------------------------------------------------
# Reaping a task's process frees its pid, which is also its group's id: after
# that the id may belong to an unrelated process. So the launcher sees exits
# without reaping (`poll`), signals a group only while its leader is unreaped
# (`signal_group`, `sweep`), and reaps in one place, `sweep`, right after the
# group's SIGKILL.
def poll(task: Task) -> int | None:
    """The current run's exit code once it has ended (recorded, not reaped), of a task
    that has started."""
    if task.returncode is None:
        proc = task.run.proc
        assert proc is not None, f"{task.name} has started"
        code = exit_code(proc)
        if code is not None:
            task.returncode, task.ended_at = code, task.clock.now()
    return task.returncode


def signal_group(task: Task, sig: int) -> None:
    proc = task.run.proc
    if proc is None or task.run.swept or proc.returncode is not None:  # reaped: not ours
        return
    killpg(proc.pid, sig)  # the task's session: its whole tree


def sweep(task: Task, reaper: orphan_reaper.OrphanReaper) -> None:
    """SIGKILLs what is left of the task's process group, then reaps its leader."""
    proc = task.run.proc
    if proc is None or task.run.swept:
        return
    signal_group(task, signal.SIGKILL)
    reaper.forget(proc.pid)
    code = proc.wait()
    task.run.swept = True
    if task.returncode is None:
        task.returncode, task.ended_at = code, task.clock.now()
    join_reader(task)


def join_reader(task: Task) -> None:
    if task.run.reader is not None:
        task.run.reader.join(_READER_JOIN_SECS)


def stop_tasks(tasks: Sequence[Task], grace: float, reaper: orphan_reaper.OrphanReaper,
               forced: Callable[[], bool] = lambda: False,
               clock: Clock | None = None) -> None:
    """Stops `tasks`: SIGTERM to each running task's group, up to `grace` seconds for them
    to end (less once `forced()`), then SIGKILL to every group not swept yet (a task that
    ended on its own keeps its real code); grace 0 SIGKILLs at once. `clock` times the
    grace (default: the system's)."""
    clock = clock or SystemClock()
    live = []
    for task in tasks:
        if task.run.proc is None or task.run.swept:
            continue
        if poll(task) is None:
            task.stopped = True
            live.append(task)
            if grace > 0:
                logger.info("stopping %s (SIGTERM)", task.name)
                signal_group(task, signal.SIGTERM)
        # else it ended on its own: its real code is kept
    deadline = clock.now() + grace
    while (grace > 0 and not forced() and clock.now() < deadline
           and any(poll(t) is None for t in live)):
        clock.sleep(_POLL_SECS)
    for task in tasks:  # SIGKILL stragglers and any processes left in the group
        if task.run.proc is None or task.run.swept:
            continue
        if task in live and poll(task) is None and grace > 0:
            logger.warning("%s still running %.1fs after SIGTERM: SIGKILL", task.name, grace)
        sweep(task, reaper)
