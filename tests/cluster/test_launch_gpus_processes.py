"""`trainexec launch` gives each training task its own GPUs, by the environment each
task receives (no GPU needed): with CUDA_VISIBLE_DEVICES=0,1, `--workers 1 --evaluator`
gives chief:0 GPU 0, worker:0 GPU 1 and the evaluator none, and its first lines say so.
The assignment itself is tests/test_launch_gpus.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Each task prints what it was given.
PRINT_GPUS = ("import os; print('CUDA_VISIBLE_DEVICES=[%s] growth=[%s]' % ("
              "os.environ.get('CUDA_VISIBLE_DEVICES', 'unset'), "
              "os.environ.get('TF_FORCE_GPU_ALLOW_GROWTH', 'unset')))")


def _launch(*flags, visible="0,1"):
    """Runs the launcher with `flags`, each task printing its GPUs; every task is
    waited for (none is stopped before it printed)."""
    waits = [w for job in ("chief", "worker", "ps", "evaluator")
             if job == "chief" or f"--{job}" in flags or (job == "worker" and "--workers" in flags)
             for w in ("--wait-for", job)]
    flags = (*flags, *waits)
    env = dict(os.environ, PYTHONPATH=ROOT, CUDA_VISIBLE_DEVICES=visible)
    env.pop("TF_FORCE_GPU_ALLOW_GROWTH", None)
    done = subprocess.run([sys.executable, "-m", "trainexec", "launch", *flags, "--",
                           sys.executable, "-c", PRINT_GPUS], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = dict(re.findall(r"^\[(\w+:\d+)\] CUDA_VISIBLE_DEVICES=\[([^\]]*)\]", done.stdout,
                           re.M))
    return seen, done.stdout + done.stderr


def test_each_training_task_its_own_gpu_the_evaluator_none_and_said_first():
    seen, printed = _launch("--workers", "1", "--evaluator")
    assert seen == {"chief:0": "0", "worker:0": "1", "evaluator:0": ""}
    lines = printed.splitlines()
    said = [i for i, line in enumerate(lines) if "GPUs (CUDA_VISIBLE_DEVICES)" in line]
    started = [i for i, line in enumerate(lines) if "started chief:0" in line]
    assert said and said[0] < started[0], printed
    assert ("chief:0 GPU 0, worker:0 GPU 1; evaluator:0 none" in lines[said[0]])


def test_gpus_per_task_and_gpus_to():
    seen, _ = _launch("--workers", "1", "--ps", "1", "--evaluator", "--gpus-per-task", "2",
                      "--gpus-to", "chief,worker,evaluator", visible="0,1,2,3,4,5")
    assert seen == {"chief:0": "0,1", "worker:0": "2,3", "ps:0": "", "evaluator:0": "4,5"}
    every, printed = _launch("--workers", "1", "--gpus-per-task", "0")
    assert every == {"chief:0": "0,1", "worker:0": "0,1"}
    assert "GPUs (CUDA_VISIBLE_DEVICES)" not in printed


def test_without_gpus_nothing_is_set_or_said():
    seen, printed = _launch("--workers", "1", visible="")
    assert seen == {"chief:0": "", "worker:0": ""}  # as the launcher's own
    assert "GPUs" not in printed
