"""trainexec/contract/exit_watchdog.py: the watchdog outside the interpreter ends a task
still alive after its time, leaves as soon as the task has ended, and never touches a
process that only has the task's pid. A task holding its interpreter at exit, ended
from outside: tests/test_contract_exit_deadline.py."""

import subprocess
import sys
import time

import pytest

from trainexec.contract.exit_watchdog import (WATCHDOG, read_outside_exit, start_time,
                                              watch_from_outside)
from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV

pytestmark = pytest.mark.any_line


def _sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_task_still_alive_after_its_time_is_killed_saying_why():
    task = _sleeper()
    try:
        watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WATCHDOG, str(task.pid),
             start_time(task.pid), "0.5", "worker:1"], stderr=subprocess.PIPE, text=True)
        _, said = watchdog.communicate(timeout=30)
        assert task.wait(timeout=10) == -9
        assert "[worker:1] trainexec: worker:1 is still running 0s after its role" in said
    finally:
        task.kill()


def test_the_watchdog_leaves_as_soon_as_the_task_has_ended():
    task = _sleeper()
    watchdog = watch_from_outside(60.0, "worker:1", pid=task.pid)
    assert watchdog is not None
    task.kill()
    task.wait()
    began = time.monotonic()
    assert watchdog.wait(timeout=10) == 0 and time.monotonic() - began < 5


def test_a_process_that_only_has_the_tasks_pid_is_left_alone():
    other = _sleeper()
    try:
        wrong_start = str(int(start_time(other.pid)) - 1)  # the task was another process
        watchdog = subprocess.Popen([sys.executable, "-I", "-S", "-c", WATCHDOG,
                                     str(other.pid), wrong_start, "0.2", "worker:1"])
        assert watchdog.wait(timeout=10) == 0
        assert other.poll() is None  # still alive
    finally:
        other.kill()


def test_under_a_launcher_the_watchdog_records_the_code_the_task_was_ending_with(tmp_path):
    task = _sleeper()
    try:
        watchdog = watch_from_outside(0.5, "worker:1", code=0, pid=task.pid,
                                      environ={LAUNCH_DIR_ENV: str(tmp_path)})
        assert watchdog is not None and watchdog.wait(timeout=30) is not None
        assert task.wait(timeout=10) == -9
        assert read_outside_exit(str(tmp_path), "worker:1", task.pid) == 0
        # another run of the task (another pid), or no launcher: nothing to count
        assert read_outside_exit(str(tmp_path), "worker:1", task.pid + 1) is None
        assert read_outside_exit(None, "worker:1", task.pid) is None
        assert not list(tmp_path.glob("exits/*.tmp"))  # written whole, then renamed
    finally:
        task.kill()

