"""trainexec/cli.py: the `trainexec` command. `trainexec tfconfig` shows how TF_CONFIG is
understood (exit 2 when malformed); `trainexec launch` runs a local cluster: its output,
summary, exit codes (0, 1, 2 for bad arguments, 130/143 on signals), and no survivors.

The launched program is tests/launch_programs/role.py (see its docstring).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from processes import (ROOT, Launcher, assert_no_survivors, cli, count_ready, printed_pids,
                       role)
from tf_configs import TFJOB_NO_WORKERS, TFJOB_TWO_EVALUATORS, H, tf_config


# -- trainexec tfconfig --------------------------------------------------------------------
def _cli(env_tf_config, *args):
    env = dict(os.environ, TF_CONFIG=env_tf_config)
    return subprocess.run([sys.executable, "-m", "trainexec", "tfconfig", *args], env=env,
                          capture_output=True, text=True, timeout=60)

def test_cli_tfconfig_shows_role():
    done = _cli(tf_config("ps", 0))
    assert done.returncode == 0, done.stderr
    assert "role: ps:0" in done.stdout and "h3:2222   <- this task" in done.stdout

def test_cli_tfconfig_exits_2_on_error():
    done = _cli(tf_config("worker", 5))
    assert done.returncode == 2
    assert 'task.index 5 is out of range for "worker"' in done.stderr

def test_cli_tfconfig_says_which_trainers_run_a_worker_only_cluster():
    done = _cli(tf_config("worker", 1, {"worker": ["h1:2222", "h2:2222"]}))
    assert done.returncode == 0, done.stderr
    assert '  Estimator: no: the cluster has no "chief" (or "master") job' in done.stdout
    assert ("  Keras: yes, MultiWorkerMirroredStrategy; worker:0 acts as chief"
            in done.stdout)

def test_cli_tfconfig_json_leaves_out_empty_jobs():
    done = _cli(tf_config("ps", 0, TFJOB_NO_WORKERS), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"cluster": {"chief": [H[0]], "ps": [H[1]]},
                                       "task": {"type": "ps", "index": 0}}

def test_cli_tfconfig_fails_only_the_evaluator_that_cannot_run():
    chief = _cli(tf_config("chief", 0, TFJOB_TWO_EVALUATORS))
    assert chief.returncode == 0, chief.stderr
    assert "evaluators: only evaluator:0 runs (2 listed)" in chief.stdout
    second = _cli(tf_config("evaluator", 1, TFJOB_TWO_EVALUATORS))
    assert second.returncode == 2
    assert "evaluator:1 cannot run" in second.stderr


# -- trainexec launch ----------------------------------------------------------------------
def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(cli(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)

@pytest.mark.cluster
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

@pytest.mark.cluster
def test_cli_failure_names_the_task_and_exits_1():
    proc = run_cli("--workers", "2", "--ps", "1", "--grace", "1", "--",
                   *role("chief=serve", "ps=spawn", "worker:1=exit:3"))
    assert proc.returncode == 1
    assert "job failed: worker:1 failed with exit code 3" in proc.stderr
    assert "    line 30" in proc.stderr
    assert "job FAILED" in proc.stdout
    assert_no_survivors(printed_pids(proc.stdout))

@pytest.mark.cluster
def test_cli_timeout_exits_1():
    proc = run_cli("--timeout", "1.5", "--grace", "0.2", "--", *role("chief=hang"))
    assert proc.returncode == 1
    assert "timed out after 1.5s; still running: chief:0\n" in proc.stderr
    assert "chief:0 last lines:\n" in proc.stderr and "    ready" in proc.stderr
    assert_no_survivors(printed_pids(proc.stdout))

@pytest.mark.parametrize("args, message", [
    (["--workers", "-1", "--", "x"], "--workers -1 is negative"),
    (["--max-restarts", "-2", "--", "x"], "--max-restarts -2 is negative"),
    (["--no-chief", "--workers", "0", "--", "x"], "--no-chief with --workers 0"),
    (["--timeout", "0", "--", "x"], "--timeout 0 must be positive"),
    (["--grace", "-1", "--", "x"], "--grace -1 is negative"),
    (["--wait-for", "evaluator", "--", "x"], "wait_for names 'evaluator', which is not in"),
    (["--workers", "2", "--"], "no command given"),
    ([], "no command given"),
    (["--workers", "many", "--", "x"], "argument --workers: invalid int value: 'many'"),
    (["--", "/nonexistent/trainexec-program"], "cannot run '/nonexistent/trainexec-program'"),
])
def test_cli_argument_errors_exit_2_naming_the_flag(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr

@pytest.mark.cluster
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

@pytest.mark.cluster
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
