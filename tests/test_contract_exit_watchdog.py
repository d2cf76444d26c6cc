"""trainexec/contract/exit_watchdog.py: the watchdog outside the interpreter ends a task
still alive after its time, leaves as soon as the task has ended, and never touches a
process that only has the task's pid. A task holding its interpreter at exit, ended
from outside: tests/test_contract_exit_deadline.py."""

import subprocess
import sys
import time

import pytest

from trainexec.contract.exit_watchdog import (WATCHDOG, start_time, take_outside_exit,
                                              watch_from_outside)
from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.any_line, pytest.mark.timed]


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
        # another run of the task (another pid) finds nothing to count
        assert take_outside_exit(str(tmp_path), "worker:1", task.pid + 1) is None
        assert take_outside_exit(str(tmp_path), "worker:1", task.pid) == 0
        # read once: the record spoke of that run only
        assert take_outside_exit(str(tmp_path), "worker:1", task.pid) is None
        assert not list(tmp_path.glob("exits/*"))  # written whole (renamed), then taken
    finally:
        task.kill()


def test_a_shell_that_started_the_task_is_matched_by_the_tasks_process_group(tmp_path):
    # `bash -c "python ..."` without exec: the launcher started the shell (its pid leads
    # the process group), the watchdog watches the interpreter.
    shell = subprocess.Popen(["bash", "-c", f"{sys.executable} -c 'import time; "
                              "time.sleep(60)'; exit $?"], start_new_session=True)
    try:
        wait_until = time.monotonic() + 10
        children = []
        while not children and time.monotonic() < wait_until:
            with open(f"/proc/{shell.pid}/task/{shell.pid}/children") as f:
                children = [int(c) for c in f.read().split()]
            time.sleep(0.05)
        assert children, "the shell started its program"
        watchdog = watch_from_outside(0.3, "worker:0", code=0, pid=children[0],
                                      environ={LAUNCH_DIR_ENV: str(tmp_path)})
        assert watchdog is not None and watchdog.wait(timeout=30) is not None
        assert shell.wait(timeout=10) == 137  # the shell passes its program's SIGKILL on
        assert take_outside_exit(str(tmp_path), "worker:0", shell.pid) == 0
    finally:
        shell.kill()


def test_without_a_launcher_the_watchdog_only_kills(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task = _sleeper()
    try:
        watchdog = subprocess.Popen([sys.executable, "-I", "-S", "-c", WATCHDOG,
                                     str(task.pid), start_time(task.pid), "0.3", "worker:1"],
                                    stderr=subprocess.PIPE, text=True)
        _, said = watchdog.communicate(timeout=30)
        assert task.wait(timeout=10) == -9
        assert "its restart finds training complete" in said
        assert not list(tmp_path.rglob("*"))  # no record anywhere it could have gone
    finally:
        task.kill()
