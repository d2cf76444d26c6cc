"""A local cluster: one process per TF_CONFIG task, on this machine.

`LocalCluster` runs the same command once per task (chief, workers, ps and an
optional evaluator), each with its own validated `TF_CONFIG` and a free port,
streams their output prefixed with the task name, applies an exit policy and
never leaves a process behind. `trainexec launch` is its command line.

Example::

    with LocalCluster(["python", "train.py"], workers=2, ps=1,
                      evaluator=True) as cluster:
        result = cluster.wait(timeout=600)
    print(result.summary())
    if not result.ok:
        print(result.reason)

    $ trainexec launch --workers 2 --ps 1 --evaluator -- python train.py

Exit policy: the job succeeds when the primary tasks (the chief, or worker:0
without a chief, and the evaluator; or those named by `wait_for`) exit 0;
tasks still running then (ps, serving workers) are stopped: SIGTERM, then
SIGKILL after `grace_secs`. A task that exits non-zero, or dies by a signal
we did not send, is restarted with the same TF_CONFIG while it has restarts
left; otherwise the job fails and every other task is stopped. The decision
is a pure function, `trainexec.launch_policy.decide`.

Restart groups (`trainexec.restart_groups`): a failed task restarts together
with the tasks it cannot run without, one fault costing one restart. Tasks
announce their group in the directory the launcher names in
`TRAINEXEC_LAUNCH_DIR` (KerasTrainer jobs do: all MultiWorkerMirroredStrategy
training tasks together; a ParameterServerStrategy ps with the chief; a PSS
worker alone, and the job goes on without it once no restarts are left);
`restart_groups=[["chief", "worker"]]` (`--restart-group chief,worker`) does
it for hand-written jobs. Exit code 75 means "preempted, saved: restart me".

What dies with the launcher: each task runs in its own session, and a task is
stopped by SIGKILL to its whole process group after SIGTERM and the grace, so
every process it started that stayed in its group dies with it. A crashed
task's group is killed before the task is restarted; the group of a task that
exited 0 is killed when the job ends. If the launcher itself dies, even by
SIGKILL, a watcher process (one per started cluster, seeing the launcher's end
as EOF on a pipe) SIGKILLs every task group not yet killed, and on Linux the
kernel also SIGKILLs each task (PR_SET_PDEATHSIG, set in the task before exec).
Not covered: a process that leaves its task's group (setsid or setpgid, as a
daemon does); the grandchildren of a task if the launcher and the watcher are
both killed (the tasks still die on Linux); a task that execs a set-user-ID
program loses the parent-death signal (the watcher still kills its group).

Process group ids: a group is signalled only while its leader (the task's
process) is the launcher's unreaped child, alive or a zombie, so its id cannot
have been given to another process; exits are seen without reaping
(os.waitid with WNOWAIT) and the leader is reaped right after its group's
SIGKILL (without os.waitid, as on macOS before Python 3.13, an exit is seen by
reaping, and that group is then left alone rather than risk it). The watcher,
acting after the launcher is gone, signals groups within moments of the tasks'
deaths; reusing one of those ids so soon would take the kernel cycling through
its whole pid range.
"""

from __future__ import annotations

import atexit
import collections
import ctypes
import dataclasses
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from typing import Any, Callable, Mapping, Sequence, TextIO, Union

import portpicker

from trainexec.cluster import CHIEF, EVALUATOR, PS, TF_CONFIG, WORKER, ClusterConfig
from trainexec.errors import ConfigError
from trainexec import launch_policy as policy
from trainexec.restart_groups import LAUNCH_DIR_ENV, merge_rules, parse_group_flag, read_rules
from trainexec.task_logging import LAUNCHED_TASK_ENV

__all__ = ["JobResult", "LocalCluster", "Task", "TaskOutcome"]

logger = logging.getLogger(__name__)

Output = Union[TextIO, Callable[[str], Any]]

MAX_LINES = 100_000  # lines kept in memory per task
TAIL_LINES = 20  # lines of a failed task shown in the failure reason
_POLL_SECS = 0.02
_READER_JOIN_SECS = 1.0  # a grandchild may hold the pipe open after its parent exits
_WATCHER_EXIT_SECS = 5.0
_ATEXIT_LOCK_SECS = 1.0
_OUTPUT_LOCK = threading.Lock()  # one line at a time, across clusters and threads


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _how_it_ended(code: int) -> str:
    return (f"was killed by {_signal_name(-code)}" if code < 0
            else f"failed with exit code {code}")


def _exit_text(code: int | None, stopped: bool = False) -> str:
    """"stopped", "running", "SIGKILL" or the exit code as text."""
    if stopped:
        return "stopped"
    if code is None:
        return "running"
    return _signal_name(-code) if code < 0 else str(code)


@dataclasses.dataclass(eq=False)
class Task:
    """One process of the cluster (restarts reuse the same Task and TF_CONFIG).

    `returncode` is None while running (negative: killed by that signal);
    `stopped` is True when the launcher stopped it; `pids` lists every run;
    `restarts` counts automatic and `LocalCluster.restart()` restarts (only
    automatic ones use up `max_restarts`).
    """

    task_type: str
    index: int
    tf_config: str
    address: str | None
    returncode: int | None = None
    restarts: int = 0
    stopped: bool = False
    started_at: float | None = None  # time.monotonic() of the first run
    ended_at: float | None = None
    pids: list[int] = dataclasses.field(default_factory=list)
    _proc: subprocess.Popen | None = dataclasses.field(default=None, repr=False)
    _reader: threading.Thread | None = dataclasses.field(default=None, repr=False)
    _crashes_restarted: int = dataclasses.field(default=0, repr=False)  # restarts it caused
    _left: bool = dataclasses.field(default=False, repr=False)  # failed; the job goes on
    _swept: bool = dataclasses.field(default=False, repr=False)  # group killed, leader reaped
    _lines: collections.deque = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=MAX_LINES), repr=False)
    _lines_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return f"{self.task_type}:{self.index}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self.returncode is None

    @property
    def run_secs(self) -> float:
        if self.started_at is None:
            return 0.0
        end = time.monotonic() if self.running or self.ended_at is None else self.ended_at
        return max(0.0, end - self.started_at)

    def output_lines(self) -> list[str]:
        """Every line captured so far (stdout and stderr, all runs)."""
        with self._lines_lock:
            return list(self._lines)

    def tail(self, n: int = TAIL_LINES) -> list[str]:
        """The last `n` lines captured."""
        return self.output_lines()[-n:] if n > 0 else []


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
        return _exit_text(self.returncode, self.stopped)


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


def _format_address(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def _pick_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = portpicker.pick_unused_port()
        if port not in ports:
            ports.append(port)
    return ports


# -- processes: exit codes without reaping, the parent-death signal, the watcher ----------
def _exit_code(proc: subprocess.Popen) -> int | None:
    """`proc`'s exit code once it has ended (negative: killed by that signal), or None.

    Unlike `Popen.poll()` this does not reap it: until it is reaped its pid, which
    is also its process group's id, cannot be given to another process, so the
    group can still be signalled safely (see `LocalCluster._sweep`).
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


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _load_prctl() -> Callable[..., int] | None:
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


def _die_with_parent(prctl: Callable[..., int], parent_pid: int) -> Callable[[], None]:
    """A Popen `preexec_fn` asking the kernel to SIGKILL the child when its parent
    ends. The kernel ties this to the parent *thread* that forked, hence
    `_ForkingThread`; it survives exec, except of set-user-ID programs."""
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


class _ForkingThread:
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
            if self._pid != os.getpid():  # first use, or in a forked copy of this process
                self._calls = queue.SimpleQueue()
                threading.Thread(target=self._serve, args=(self._calls,),
                                 name="trainexec-fork", daemon=True).start()
                self._pid = os.getpid()
            calls = self._calls
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


_FORKING_THREAD = _ForkingThread()

# The watcher: reads "+<pgid>" (a task group started) and "-<pgid>" (swept) lines;
# EOF means the launcher has ended, however it ended: then it SIGKILLs the groups left.
_WATCHER_SOURCE = """\
import os, signal, sys
for name in ("SIGINT", "SIGTERM", "SIGHUP"):
    signal.signal(getattr(signal, name), signal.SIG_IGN)
groups = set()
for line in sys.stdin.buffer:
    try:
        pgid = int(line[1:])
    except ValueError:
        continue
    (groups.add if line[:1] == b"+" else groups.discard)(pgid)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""
_WATCHERS: "weakref.WeakSet[_Watcher]" = weakref.WeakSet()


class _Watcher:
    """A process that SIGKILLs a cluster's task groups if the launcher dies first.

    Only the launcher holds the pipe's write end (close-on-exec, and closed in
    forked children), so the watcher reads EOF exactly when the launcher is gone;
    it runs in its own session and ignores SIGINT, SIGTERM and SIGHUP. It starts
    on the first `add` and ends on `close` (or with the launcher).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._fd: int | None = None
        self._proc: subprocess.Popen | None = None
        _WATCHERS.add(self)

    def add(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)
            if self._fd is not None:
                self._send(f"+{pgid}\n")
            if self._fd is None:  # none yet, or it has died: a new one learns every group
                self._start()

    def forget(self, pgid: int) -> None:
        """Before the group's leader is reaped: from then on its id may be reused."""
        with self._lock:
            self._groups.discard(pgid)
            if self._fd is not None:
                self._send(f"-{pgid}\n")

    def close(self) -> None:
        """Ends the watcher (it then kills any group not forgotten) and reaps it."""
        with self._lock:
            fd, proc, self._fd, self._proc = self._fd, self._proc, None, None
        if fd is not None:
            os.close(fd)
        if proc is not None:
            try:
                proc.wait(_WATCHER_EXIT_SECS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _start(self) -> None:
        try:
            read, write = os.pipe()
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _WATCHER_SOURCE], stdin=read,
                    stdout=subprocess.DEVNULL, start_new_session=True)
            except BaseException:
                os.close(write)
                raise
            finally:
                os.close(read)
        except (OSError, ValueError) as err:
            logger.warning("could not start the watcher process (%s): if the launcher is "
                           "killed, processes its tasks started may outlive it", err)
            return
        self._fd = write
        self._send("".join(f"+{pgid}\n" for pgid in sorted(self._groups)))

    def _send(self, lines: str) -> None:
        try:
            os.write(self._fd, lines.encode())
        except OSError as err:  # it died: the next add starts another
            logger.warning("the watcher process has ended (%s): another starts with the "
                           "next task started", err)
            os.close(self._fd)
            self._fd = None
            if self._proc is not None:
                self._proc.poll()

    def _after_fork_in_child(self) -> None:
        """In a forked copy of the launcher: the pipe and the watcher are the parent's."""
        self._lock = threading.Lock()
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._proc, self._groups = None, None, set()


def _after_fork_in_child() -> None:
    """A forked copy of the launcher owns neither its forking thread nor its watchers."""
    _FORKING_THREAD._after_fork_in_child()
    for watcher in list(_WATCHERS):
        watcher._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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
    `trainexec.restart_groups`). Leaving the `with` block always stops every task.
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
        jobs = [(CHIEF, 1 if chief else 0), (WORKER, workers), (PS, ps)]
        ports = iter(_pick_ports(sum(n for _, n in jobs)))
        spec = {job: [_format_address(host, next(ports)) for _ in range(n)]
                for job, n in jobs if n}
        base = ClusterConfig(cluster=spec)
        members = [(job, i) for job, n in jobs for i in range(n)]
        if evaluator:
            members.append((EVALUATOR, 0))
        self._tasks: list[Task] = []
        for task_type, index in members:
            config = base.for_task(task_type, index)  # validates
            self._tasks.append(Task(task_type, index, config.to_json(), config.task_address))
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
        self._restarts = 0
        self._lock = threading.RLock()
        self._started = False
        self._result: JobResult | None = None
        self._interrupt: int | None = None
        self._force = False
        self._start_time = 0.0
        self._watcher = _Watcher()
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
            self._prctl = _load_prctl()
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
            self._sweep(task)  # the previous run's group, before its id can be reused
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.env)
        env[TF_CONFIG] = task.tf_config
        env[LAUNCHED_TASK_ENV] = task.name  # its lines are prefixed here, not again
        if self._launch_dir:
            env[LAUNCH_DIR_ENV] = self._launch_dir
        preexec = _die_with_parent(self._prctl, os.getpid()) if self._prctl else None

        def start() -> subprocess.Popen:  # on the forking thread; tracks the task at once
            proc = subprocess.Popen(self.command, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=preexec)
            task._proc, task.returncode, task.stopped, task.ended_at = proc, None, False, None
            task._swept = False
            task.pids.append(proc.pid)
            self._watcher.add(proc.pid)
            task._reader = threading.Thread(target=self._pump, args=(task, proc.stdout),
                                            name=f"launch-{task.name}", daemon=True)
            task._reader.start()
            return proc

        proc = _FORKING_THREAD.run(start)
        atexit.unregister(self._kill_everything)  # safety net, registered once
        atexit.register(self._kill_everything)
        if task.started_at is None:
            task.started_at = time.monotonic()
        logger.info("started %s (pid %s) %s", task.name, proc.pid,
                    task.address or "outside the cluster")

    def _pump(self, task: Task, stream: Any) -> None:
        prefix = f"[{task.name}] "
        with stream:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                with task._lines_lock:
                    task._lines.append(line)
                self._write(prefix + line)

    def _write(self, line: str) -> None:
        out = self.output if self.output is not None else sys.stdout
        with _OUTPUT_LOCK:
            try:
                if hasattr(out, "write"):
                    out.write(line + "\n")
                    out.flush()
                else:
                    out(line)
            except Exception:  # a broken sink must not stop the pipe being drained
                logger.debug("could not write output line", exc_info=True)

    # Reaping a task's process frees its pid, which is also its group's id: after
    # that the id may belong to an unrelated process. So the launcher sees exits
    # without reaping (`_poll`), signals a group only while its leader is unreaped
    # (`_signal`, `_sweep`), and reaps in one place, `_sweep`, right after the
    # group's SIGKILL.
    def _poll(self, task: Task) -> int | None:
        """The current run's exit code once it has ended (recorded, not reaped)."""
        if task.returncode is None:
            code = _exit_code(task._proc)
            if code is not None:
                task.returncode, task.ended_at = code, time.monotonic()
        return task.returncode

    def _signal(self, task: Task, sig: int) -> None:
        proc = task._proc
        if proc is None or task._swept or proc.returncode is not None:  # reaped: not ours
            return
        _killpg(proc.pid, sig)  # the task's session: its whole tree

    def _sweep(self, task: Task) -> None:
        """SIGKILLs what is left of the task's process group, then reaps its leader."""
        proc = task._proc
        if proc is None or task._swept:
            return
        self._signal(task, signal.SIGKILL)
        self._watcher.forget(proc.pid)
        code = proc.wait()
        task._swept = True
        if task.returncode is None:
            task.returncode, task.ended_at = code, time.monotonic()
        self._join_reader(task)

    @staticmethod
    def _join_reader(task: Task) -> None:
        if task._reader is not None:
            task._reader.join(_READER_JOIN_SECS)

    def _stop_tasks(self, tasks: Sequence[Task], grace: float) -> None:
        with self._lock:
            live = []
            for task in tasks:
                if task._proc is None or task._swept:
                    continue
                if self._poll(task) is None:
                    task.stopped = True
                    live.append(task)
                    if grace > 0:
                        logger.info("stopping %s (SIGTERM)", task.name)
                        self._signal(task, signal.SIGTERM)
                # else it ended on its own: its real code is kept
            deadline = time.monotonic() + grace
            while (grace > 0 and not self._force and time.monotonic() < deadline
                   and any(self._poll(t) is None for t in live)):
                time.sleep(_POLL_SECS)
            for task in tasks:  # SIGKILL stragglers and any processes left in the group
                if task._proc is None or task._swept:
                    continue
                if task in live and self._poll(task) is None and grace > 0:
                    logger.warning("%s still running %.1fs after SIGTERM: SIGKILL",
                                   task.name, grace)
                self._sweep(task)

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
                    self._signal(task, signal.SIGKILL)
                    self._watcher.forget(task._proc.pid)  # done: its leader is reaped soon
        finally:
            self._lock.release()

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop_all()

    # -- exit policy -------------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> JobResult:
        """Waits for the job to succeed or fail (see the module doc) and returns
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
            if task.running and self._poll(task) is not None:
                code = task.returncode
                if task.stopped or code == 0:  # its group lives on until the task is stopped
                    self._join_reader(task)
                    logger.info("%s exited with code %s", task.name, code)
                else:
                    self._sweep(task)  # what it left behind dies with it, before any restart
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
                               _how_it_ended(task.returncode))
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
                return self._finish_stopped(f"interrupted by {_signal_name(self._interrupt)}",
                                            signum=self._interrupt)
            if action == policy.STOP:
                return self._finish_stopped(f"timed out after {timeout:g}s")
            unfinished = ", ".join(f"{name} ({_exit_text(t.returncode, t.stopped)})"
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

    def _view(self, timed_out: bool) -> policy.JobView:
        tasks = tuple(policy.TaskView(t.name, self._state(t), t.returncode,
                                      t._crashes_restarted, t.ended_at or 0.0)
                      for t in self._tasks)
        rules, ending = {}, ()
        primaries_done = all(t.state == policy.EXITED for t in tasks if t.name in self.primary)
        if any(t.state == policy.FAILED for t in tasks) or (
                primaries_done and self._wait_for_announced):  # read only when needed
            names = [t.name for t in self._tasks]
            announced = read_rules(self._launch_dir, names)
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
                       _how_it_ended(cause.returncode), together, cause._crashes_restarted,
                       self.max_restarts)
        self._stop_tasks(peers, self.grace_secs if decision.gentle else 0.0)
        for task in group:
            self._sweep(task)
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
        how = _how_it_ended(code)
        budget = (f"after {task._crashes_restarted} restart(s), none left" if self.max_restarts
                  else "no restarts allowed")
        lines = task.tail(TAIL_LINES)
        shown = "\n".join(f"    {line}" for line in lines) or "    (no output)"
        reason = f"{task.name} {how} ({budget})\n  last {len(lines)} lines of {task.name}:\n{shown}"
        logger.error("%s %s: stopping every task", task.name, how)
        return self._finish(False, reason, failed_task=task.name, exit_code=code,
                            last_lines=tuple(lines))

    def _finish_stopped(self, why: str, signum: int | None = None) -> JobResult:
        running = [t for t in self._tasks if t.running]
        names = ", ".join(t.name for t in running) or "none"
        reason = f"{why}; still running: {names}"
        for task in running:
            last = task.tail(5) if task.name in self.primary else []
            if last:
                reason += f"\n  {task.name} last lines:\n" + "\n".join(
                    f"    {line}" for line in last)
        logger.error("%s: stopping every task", why)
        return self._finish(False, reason, still_running=tuple(t.name for t in running),
                            signal=signum)
