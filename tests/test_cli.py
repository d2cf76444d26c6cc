"""trainexec/cli.py: the `trainexec` command. `trainexec tfconfig` shows how TF_CONFIG is
understood (exit 2 when malformed); `trainexec launch` refuses bad arguments with exit 2.
`trainexec launch` running real jobs (its output, summary, exit codes 0, 1, 130/143 on
signals, and no survivors) is tests/cluster/test_cli_launch.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from processes import run_cli
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
