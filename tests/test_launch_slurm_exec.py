"""`trainexec slurm-exec` outside a Slurm allocation: a step's environment as srun sets
it, a real child process. (The real Slurm runs it in tests/cluster/test_slurm.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV
from trainexec.contract.slurm_env import MODEL_DIR_ENV, ROLES_ENV
from trainexec.contract.slurm_outcome import read_verdicts
from trainexec.launch.slurm_exec import run_task, step_run_key

pytestmark = pytest.mark.any_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _step_env(tmp_path, rank: int) -> dict:
    return {**os.environ, "PYTHONPATH": ROOT, ROLES_ENV: "chief=1,worker=2",
            MODEL_DIR_ENV: str(tmp_path / "model"), "SLURM_JOB_ID": "7",
            "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank), "SLURM_NODEID": "0",
            "SLURM_STEP_NODELIST": "localhost",
            "SLURM_STEP_TASKS_PER_NODE": "3", "SLURMD_NODENAME": "localhost"}


# A task whose role is over but whose interpreter its shutdown holds: its exit
# watchdog (started as the exit deadline starts it) kills it, recording the code it
# was ending with.
HELD_AT_EXIT = """
import json, os, time
from trainexec.contract.exit_watchdog import watch_from_outside
task = json.loads(os.environ["TF_CONFIG"])["task"]
watch_from_outside(0.5, f"{task['type']}:{task['index']}", code=CODE)
time.sleep(60)
"""


@pytest.mark.parametrize("code, cause, shell", [
    (0, "done", False), (143, "preempted", False),
    (0, "done", True)],  # the command a shell that started the task and passed its code on
    ids=["done", "preempted", "through-a-shell"])
def test_a_task_its_exit_watchdog_killed_gets_the_code_it_was_ending_with(
        tmp_path, capfd, code, cause, shell):
    env = _step_env(tmp_path, rank=2)
    # A launcher's directory in the environment (a launch inside the step's task, or
    # one inherited) is not where this task's record goes.
    env[LAUNCH_DIR_ENV] = str(tmp_path / "launcher")
    program = [sys.executable, "-c", HELD_AT_EXIT.replace("CODE", str(code))]
    command = (["sh", "-c", 'python_=$1; shift; "$python_" "$@"; exit $?', "sh", *program]
               if shell else program)
    shell_code = run_task(command, environ=env)
    assert not (tmp_path / "launcher").exists()
    assert shell_code == code
    verdicts = read_verdicts(env[MODEL_DIR_ENV], step_run_key(env))
    assert (verdicts["worker:1"].code, verdicts["worker:1"].cause) == (code, cause)
    err = capfd.readouterr().err
    assert "ended by its exit watchdog" in err and "SIGKILL, exit 137" in err


def test_a_task_killed_by_anything_else_is_137(tmp_path):
    env = _step_env(tmp_path, rank=0)
    shell_code = run_task([sys.executable, "-c",
                           "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                          environ=env)
    assert shell_code == 137
    assert read_verdicts(env[MODEL_DIR_ENV], step_run_key(env))["chief:0"].code == 137
