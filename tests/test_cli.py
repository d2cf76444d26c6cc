"""trainexec/cli/: the `trainexec` command. `trainexec tfconfig` shows how TF_CONFIG is
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
from tf_configs import (CLUSTER, RAY_WORKERS, SAGEMAKER_PS, TFJOB, TFJOB_NO_WORKERS,
                        TFJOB_TWO_EVALUATORS, H, tf_config, tfjob_address, tfjob_dynamic_view)

pytestmark = pytest.mark.any_line


# -- trainexec tfconfig --------------------------------------------------------------------
def _cli(env_tf_config, *args):
    env = dict(os.environ, TF_CONFIG=env_tf_config)
    env.pop("TRAINEXEC_LAUNCH_DIR", None)  # set only by trainexec launch
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
    (["--network", "lan", "--", "x"], "argument --network: invalid choice: 'lan'"),
    (["--host", "10.1.2.3", "--", "x"], "--host 10.1.2.3 cannot be reached by the tasks in "
     "their private network (loopback only): use --host 127.0.0.1, or --network host"),
])
def test_cli_argument_errors_exit_2_naming_the_flag(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr



# One per producer shape: the recognised shape and every rewrite, as printed.
def _summary(env_tf_config):
    done = _cli(env_tf_config)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()

def _section(lines, title):
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")),
               len(lines))
    return lines[start + 1:end]

def _rewrites(lines):
    return _section(lines, "rewrote:")

def test_cli_tfconfig_kubeflow_tfjob():
    lines = _summary(tf_config("evaluator", 0, TFJOB, environment="cloud"))
    assert lines[0] == "recognised shape: Kubeflow TFJob"
    assert f"  evaluator:0  {tfjob_address('evaluator', 0)}   <- this task" in lines
    assert "environment: cloud" in lines
    assert _rewrites(lines) == [
        "  evaluator:0 left out of the training cluster the servers and tf.distribute are "
        "given (an evaluator only reads checkpoints)"]
    assert "  Keras: yes, ParameterServerStrategy; chief:0 coordinates" in lines

def test_cli_tfconfig_tfjob_dynamic_worker_view_of_a_worker():
    lines = _summary(tfjob_dynamic_view("worker", 1))
    assert lines[0] == "recognised shape: TFJob enableDynamicWorker (sparse)"
    assert f"  worker:1     {tfjob_address('worker', 1)}   <- this task" in lines
    assert _rewrites(lines) == ["  sparse cluster.worker kept as {index: address}: this "
                                "task sees only worker:1"]
    verdicts = _section(lines, "trainers for this cluster:")
    for trainer in ("Estimator", "Keras"):
        (verdict,) = [line for line in verdicts if line.startswith(f"  {trainer}: ")]
        assert verdict.startswith(f"  {trainer}: no: this task sees only part of the cluster")
        assert verdict.endswith("set enableDynamicWorker: false (or leave it out) in the "
                                "TFJob spec: trainexec's trainers need every task's address "
                                "on the chief")

def test_cli_tfconfig_tfjob_dynamic_worker_view_of_a_ps_and_its_json():
    lines = _summary(tfjob_dynamic_view("ps", 1))
    assert lines[0] == "recognised shape: TFJob enableDynamicWorker (sparse)"
    assert _rewrites(lines) == [
        "  empty jobs dropped (treated as absent): worker",
        f"  cluster.ps read as ps:1's own address only, {{\"1\": "
        f"\"{tfjob_address('ps', 1)}\"}} (a TFJob ps with enableDynamicWorker sees only "
        "itself, whatever its index)"]
    # The TF_CONFIG trainexec hands on: the ps at its own index, which ClusterSpec takes.
    done = _cli(tfjob_dynamic_view("ps", 1), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"cluster": {"ps": {"1": tfjob_address("ps", 1)}},
                                       "task": {"type": "ps", "index": 1}}

def test_cli_tfconfig_tfjob_dynamic_worker_view_of_the_chief_exits_2():
    done = _cli(tfjob_dynamic_view("chief", 0))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith('trainexec: TF_CONFIG cluster {"worker": {}, "ps": []} '
                                  "gives chief:0 no address")
    assert "enableDynamicWorker gives the chief no cluster" in done.stderr
    assert "set enableDynamicWorker: false (or leave it out) in the TFJob spec" in done.stderr

def test_cli_tfconfig_sagemaker_parameter_server_master():
    lines = _summary(tf_config("master", 0, SAGEMAKER_PS, environment="cloud"))
    assert lines[0] == "recognised shape: SageMaker parameter server (master)"
    assert _rewrites(lines) == ["  master:0 handed to tf.distribute as chief:0 by the Keras "
                                "trainer (tf.estimator keeps master)"]
    assert ("  Keras: yes, ParameterServerStrategy; master:0 coordinates (handed to "
            "tf.distribute as chief:0)") in lines
    assert "  Estimator: yes, master:0 trains and evaluates after checkpoint saves" in lines
    # --json hands TF_CONFIG on as given: the master stays (tf.estimator reads it so).
    done = _cli(tf_config("master", 0, SAGEMAKER_PS, environment="cloud"), "--json")
    assert json.loads(done.stdout)["cluster"] == SAGEMAKER_PS

def test_cli_tfconfig_workers_only():
    lines = _summary(tf_config("worker", 1, RAY_WORKERS))
    assert lines[0] == "recognised shape: workers only"
    assert "rewrote: nothing (TF_CONFIG used as given)" in lines

def test_cli_tfconfig_generic():
    lines = _summary(tf_config("ps", 0, CLUSTER))
    assert lines[0] == "recognised shape: generic"
    assert "rewrote: nothing (TF_CONFIG used as given)" in lines
