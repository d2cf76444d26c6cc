"""Helpers for tests that start real processes: waiting, liveness, no survivors,
and the launcher's stand-in task program (launch_programs/role.py) and command line."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
ROLE = Path(__file__).resolve().parent / "launch_programs" / "role.py"
TF_ESTIMATOR_IMPORT = "from tensorflow import estimator"
TRAINEXEC_ESTIMATOR_IMPORT = "import trainexec.estimator as estimator"


def child_env(**extra: str) -> dict:
    """The environment of a child Python program that imports trainexec and the tests'
    helpers: this checkout first on its path, TensorFlow's C++ start-up lines off."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
                TF_CPP_MIN_LOG_LEVEL="2", **extra)


def line_keras_env(legacy_keras: bool) -> dict:
    """`child_env()` for a program of its own (no TF_CONFIG) whose `tf.keras` is tf_keras
    (`TF_USE_LEGACY_KERAS=1`) when `legacy_keras`, else the Keras its TensorFlow has,
    whatever this process was given."""
    env = {k: v for k, v in child_env().items()
           if k not in ("TF_CONFIG", "TF_USE_LEGACY_KERAS")}
    if legacy_keras:
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env


def with_trainexec_estimator(program: str, directory) -> str:
    """A copy, in `directory`, of tf.estimator program `program` whose one estimator import
    line (`from tensorflow import estimator`) is trainexec.estimator's: its path."""
    source = Path(program).read_text(encoding="utf-8")
    assert source.count(TF_ESTIMATOR_IMPORT) == 1, program
    changed = Path(directory) / Path(program).name
    changed.write_text(source.replace(TF_ESTIMATOR_IMPORT, TRAINEXEC_ESTIMATOR_IMPORT),
                       encoding="utf-8")
    return str(changed)


def wait_until(predicate, timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def sigterm_once_ready(run: subprocess.Popen, ready: Path, what: str,
                       before=lambda: None, start_secs: float = 60,
                       end_secs: float = 60) -> str:
    """Sends `run` (text output on a pipe) SIGTERM once the file `ready` exists and
    `before()` (checks of the running state) returned, and returns its output;
    AssertionError, with its output, if it ends before that, and `what` if `ready` is
    not there within `start_secs`. A run still alive after is killed."""
    try:
        deadline = time.monotonic() + start_secs
        while not ready.exists():
            assert run.poll() is None, run.communicate()[0]
            assert time.monotonic() < deadline, what
            time.sleep(0.1)
        before()
        run.send_signal(signal.SIGTERM)
        return run.communicate(timeout=end_secs)[0]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def survivors(pids: set[int], timeout: float = 5.0) -> list[int]:
    """The processes of `pids` still running after `timeout` seconds, which are then
    SIGKILLed so that they do not leak into other tests."""
    try:
        wait_until(lambda: not any(alive(p) for p in pids), timeout=timeout,
                   what="every started process to be gone")
        return []
    except AssertionError:
        left = sorted(p for p in pids if alive(p))
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return left


def assert_no_survivors(pids: set[int]) -> None:
    assert pids, "expected some started processes"
    left = survivors(pids)
    if left:
        raise AssertionError(f"processes outlived the launcher: {left}")


_waitid = os.waitid  # kept: a test may take os.waitid away from the launcher


def our_unreaped_child(pid: int) -> bool:
    """Whether `pid` is this process's child, alive or not yet reaped: then no other
    process can have that pid, nor a process group that id."""
    try:
        _waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return True
    except ChildProcessError:
        return False


class GroupSignals:
    """Records every os.killpg(pgid, sig) made while installed, and whether the
    group's leader was then still this process's unreaped child."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[tuple[int, int, bool]] = []
        real_killpg = os.killpg

        def killpg(pgid: int, sig: int) -> None:
            self.calls.append((pgid, sig, our_unreaped_child(pgid)))
            real_killpg(pgid, sig)

        monkeypatch.setattr(os, "killpg", killpg)

    def reached(self, pgid: int) -> bool:
        return any(group == pgid for group, _, _ in self.calls)

    def after_reaping(self) -> list[tuple[int, str]]:
        """The signals sent to a group whose leader had already been reaped."""
        return [(pgid, signal.Signals(sig).name) for pgid, sig, ok in self.calls if not ok]


# -- the launcher's tasks and command line ------------------------------------------------
def role(*rules: str) -> list[str]:
    """The command line running role.py with per-task behaviours."""
    return [sys.executable, str(ROLE), *rules]


def started_pids(cluster) -> set[int]:
    """Every process a LocalCluster started (all runs) and their announced grandchildren."""
    pids = {pid for task in cluster.tasks for pid in task.pids}
    for task in cluster.tasks:
        for line in task.output_lines():
            if line.startswith("grandchild pid "):
                pids.add(int(line.split()[-1]))
    return pids


def cli(*args: str) -> list[str]:
    """The `trainexec launch` command line."""
    return [sys.executable, "-m", "trainexec", "launch", *args]


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`trainexec launch ARGS` run to its end, its output captured."""
    return subprocess.run(cli(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def printed_pids(stdout: str) -> set[int]:
    """The pids role.py tasks announced ("[worker:0] pid 123") in the launcher's output."""
    return {int(pid) for pid in re.findall(r"^\[\w+:\d+\] (?:grandchild )?pid (\d+)$",
                                           stdout, re.MULTILINE)}


def count_ready(lines: list[str]) -> int:
    return sum(line.endswith("] ready") for line in lines)


class Launcher:
    """`trainexec launch` in its own session, its output collected by a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(cli(*args), cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))

    def _drain(self) -> list[str]:
        while not self._queue.empty():
            self.lines.append(self._queue.get())
        return self.lines

    def wait_for_lines(self, predicate, what: str) -> None:
        wait_until(lambda: predicate(self._drain()), what=what)

    def task_pids(self) -> set[int]:
        """Every process below the launcher now (tasks, grandchildren, helpers)."""
        return {p.pid for p in psutil.Process(self.proc.pid).children(recursive=True)}

    def finish(self, timeout: float = 30) -> int:
        code = self.proc.wait(timeout=timeout)
        self._reader.join(10)
        self._drain()
        return code

    def close(self) -> None:
        if self.proc.poll() is None:  # only if a test failed: leave nothing behind
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
