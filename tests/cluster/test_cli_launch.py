"""trainexec/cli/launch.py's `trainexec launch` running real jobs: its output, summary, exit codes
(0, 1, 130/143 on signals, a second Ctrl-C skipping the grace period) and no survivors.
Its argument errors (exit 2, no process started) and `trainexec tfconfig` are
tests/test_cli.py.

The launched program is tests/launch_programs/role.py (see its docstring).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from processes import (ROOT, Launcher, assert_no_survivors, cli, count_ready, printed_pids,
                       role, run_cli)

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]


def test_cli_success_prints_header_output_and_summary():
    proc = run_cli("--ps", "1", "--grace", "1", "--", *role("ps=serve", "chief=await-ps"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith('trainexec launch: cluster {"chief": ["127.0.0.1:')
    assert "[ps:0] ready" in lines and "[chief:0] ps reachable" in lines
    assert "[ps:0] got SIGTERM" in lines
    assert lines[-5].split() == ["task", "address", "exit", "restarts", "secs"]
    assert lines[-2].startswith("ps:0") and lines[-2].split()[2] == "stopped"
    assert lines[-1].startswith("job succeeded")


def test_cli_failure_names_the_task_and_exits_1():
    proc = run_cli("--workers", "2", "--ps", "1", "--grace", "1", "--",
                   *role("chief=serve", "ps=spawn", "worker:1=exit:3"))
    assert proc.returncode == 1
    assert "job failed: worker:1 failed with exit code 3" in proc.stderr
    assert "    line 30" in proc.stderr
    assert "job FAILED" in proc.stdout
    assert_no_survivors(printed_pids(proc.stdout))


def test_cli_timeout_exits_1():
    proc = run_cli("--timeout", "1.5", "--grace", "0.2", "--", *role("chief=hang"))
    assert proc.returncode == 1
    assert "timed out after 1.5s; still running: chief:0\n" in proc.stderr
    assert "chief:0 last lines:\n" in proc.stderr and "    ready" in proc.stderr
    assert_no_survivors(printed_pids(proc.stdout))


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_cli_signal_stops_every_task(sig, code):
    launcher = Launcher("--workers", "1", "--ps", "1", "--grace", "1", "--",
                        *role("chief=serve", "worker=hang", "ps=spawn"))
    try:
        launcher.wait_for_lines(lambda lines: count_ready(lines) == 3, "three tasks ready")
        pids = launcher.task_pids()
        assert len(pids) >= 4  # three tasks and the ps's grandchild
        launcher.proc.send_signal(sig)
        assert launcher.finish() == code
    finally:
        launcher.close()
    output = "\n".join(launcher.lines)
    assert f"interrupted by {sig.name}" in output
    assert "[ps:0] got SIGTERM" in output  # stopped gracefully
    assert "[worker:0] ignoring SIGTERM" in output  # then SIGKILLed after the grace
    assert_no_survivors(pids)


def test_cli_second_ctrl_c_skips_the_grace_period():
    launcher = Launcher("--grace", "60", "--", *role("chief=hang", "worker=hang"))
    try:
        launcher.wait_for_lines(lambda lines: count_ready(lines) == 2, "two tasks ready")
        pids = launcher.task_pids()
        launcher.proc.send_signal(signal.SIGINT)
        launcher.wait_for_lines(lambda lines: sum("ignoring SIGTERM" in l for l in lines) == 2,
                                "both tasks to ignore SIGTERM")
        start = time.monotonic()
        launcher.proc.send_signal(signal.SIGINT)  # do not wait 60s: SIGKILL now
        assert launcher.finish() == 130
        assert time.monotonic() - start < 20
    finally:
        launcher.close()
    assert_no_survivors(pids)


def test_cli_tfconfig_under_trainexec_launch():
    proc = subprocess.run(cli("--workers", "1", "--ps", "1", "--evaluator", "--grace", "1",
                              "--wait-for", "chief", "--wait-for", "worker", "--wait-for",
                              "ps", "--wait-for", "evaluator", "--",
                              sys.executable, "-m", "trainexec", "tfconfig"),
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for task in ("chief:0", "worker:0", "ps:0", "evaluator:0"):
        assert f"[{task}] recognised shape: trainexec launch" in lines, proc.stdout
        assert f"[{task}] rewrote: nothing (TF_CONFIG used as given)" in lines
