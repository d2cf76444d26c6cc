"""A cluster task ends within a bound once its role is over (trainexec.contract.
exit_deadline): a process whose shutdown hangs is ended with the code it was ending with,
after a stack dump; the bound is read from TRAINEXEC_EXIT_DEADLINE_SECS."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from trainexec.contract.exit_deadline import (DEFAULT_SECS, ENV_VAR, OUTSIDE_MARGIN_SECS,
                                              ExitDeadline, deadline_secs)
from trainexec.errors import ConfigError

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.any_line, pytest.mark.timed]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_bound_comes_from_the_environment():
    assert deadline_secs({}) == DEFAULT_SECS
    assert deadline_secs({ENV_VAR: "30"}) == 30.0
    assert deadline_secs({ENV_VAR: "0"}) == 0.0  # off
    for bad in ("-1", "soon", "nan"):
        with pytest.raises(ConfigError, match=f"{ENV_VAR}='{bad}' must be a number"):
            deadline_secs({ENV_VAR: bad})


def test_the_deadline_ends_the_process_with_its_code_after_the_bound():
    slept, exited, alarms, watched = [], [], [], []
    deadline = ExitDeadline(7.0, 143, "worker:0", exit_fn=exited.append,
                            sleep=slept.append, alarm=alarms.append,
                            watch=lambda secs, task, code: watched.append((secs, task, code)))
    deadline.run()
    assert slept == [7.0] and exited == [143] and deadline.fired
    deadline.start()  # no kernel backstop: a watchdog outside, OUTSIDE_MARGIN_SECS later
    assert alarms == [] and watched == [(7.0 + OUTSIDE_MARGIN_SECS, "worker:0", 143)]
    ExitDeadline(7.0, 143, exit_fn=exited.append, sleep=slept.append,
                 alarm=alarms.append, backstop=True, watch=None).start()
    assert alarms == [12]  # asked for (a retryable code): 5 s after the bound, rounded up


def _child(body: str, env_extra=None, timeout=60):
    env = dict(os.environ, PYTHONPATH=ROOT, **(env_extra or {}))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(body)], env=env,
                          capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - started


HANGS_AT_EXIT = """
    import threading, time
    from trainexec.contract.exit_deadline import end_within_at_exit
    end_within_at_exit({secs}, {code}, "worker:1")
    # A thread that never returns: the interpreter waits for it at exit, for ever.
    threading.Thread(target=time.sleep, args=(3600,), name="never-returns").start()
    print("role over", flush=True)
"""


def test_a_process_that_hangs_at_exit_ends_within_the_bound_with_its_code():
    done, secs = _child(HANGS_AT_EXIT.format(secs=1.5, code=0))
    assert done.returncode == 0, done.stderr[-2000:]
    assert secs < 1.5 + 8  # the bound, plus the interpreter's start
    assert "role over" in done.stdout
    assert "worker:1 is still running 2s after its role was over" in done.stderr
    assert "in _shutdown" in done.stderr  # where it was stuck: waiting for the thread


HOLDS_THE_LOCK_AT_EXIT = """
    import atexit
    from trainexec.contract.exit_deadline import end_within_at_exit
    end_within_at_exit({secs}, 0, "worker:1")
    # As TensorFlow's C++ shutdown can: one long call into C that never lets the
    # interpreter's lock go, so the deadline's thread never runs.
    atexit.register(lambda: sum(range(10 ** 14)))
    print("role over", flush=True)
"""


def test_a_process_holding_the_interpreter_at_exit_is_ended_from_outside():
    done, secs = _child(HOLDS_THE_LOCK_AT_EXIT.format(secs=1.0))
    assert done.returncode == -9, done.stderr[-2000:]  # SIGKILL: 137 to an orchestrator
    assert secs < 1.0 + OUTSIDE_MARGIN_SECS + 8  # the bound, the margin, the start
    assert (f"worker:1 is still running {1.0 + OUTSIDE_MARGIN_SECS:.0f}s after its role was "
            "over, its exit deadline unable to run") in done.stderr
    assert "its restart finds training complete" in done.stderr


def test_a_preempted_process_that_hangs_at_exit_keeps_its_retryable_code():
    done, _ = _child(HANGS_AT_EXIT.format(secs=1.0, code=143))
    assert done.returncode == 143, done.stderr[-2000:]


def test_a_process_that_ends_by_itself_is_not_touched():
    done, secs = _child("""
        from trainexec.contract.exit_deadline import end_within_at_exit
        end_within_at_exit(30, 0, "chief:0")
        raise SystemExit(3)
    """)
    assert done.returncode == 3 and secs < 20
    assert "still running" not in done.stderr
