"""`trainexec slurm-exec -- COMMAND`: one task of a Slurm step, its TF_CONFIG and verdict.

Run as every task of an `srun` step with `TRAINEXEC_SLURM_ROLES` set, it

1. builds this task's cluster from the step (`trainexec.cluster.slurm`) and
   starts COMMAND with `TF_CONFIG` set to it, so any tf.distribute program
   (not only trainexec's trainers) runs as its role; a step trainexec cannot
   place (not block-distributed, the wrong task count) exits 2 naming the fix;
2. passes SIGTERM and SIGINT on to COMMAND (a Slurm preemption, time limit or
   `scancel --signal=TERM` may also reach it directly: trainexec's trainers
   take a second SIGTERM during their save as the first);
3. when COMMAND ends, records this task's verdict (`trainexec.contract.slurm_outcome`)
   under `<model_dir>/trainexec/slurm/<job id>-<restart count>/`, which the
   batch script reads once srun returns, and exits with COMMAND's code (for a task
   its exit watchdog killed, held at exit, the code it was ending with:
   `trainexec.contract.exit_watchdog`);
4. when that code is permanent (1-127: a restart would repeat it), cancels the
   step (`scancel JOB.STEP`: its other tasks get SIGTERM, save and end),
   rather than letting peers wait for a task that never comes back. srun's
   `--kill-on-bad-exit` is not used: it would also SIGKILL peers still saving
   after a preemption, once the first of them exited 143.

Without `--model-dir` (or `TRAINEXEC_SLURM_MODEL_DIR`) no verdict is recorded.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
from typing import Mapping, Sequence

from trainexec.cluster.config import TF_CONFIG, ClusterConfig
from trainexec.cluster.slurm import SlurmStep
from trainexec.errors import ConfigError
from trainexec.contract.exit_codes import ExitCodes
from trainexec.contract.exit_watchdog import (RECORD_DIR_ENV, killed_by_watchdog,
                                              take_outside_exit)
from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV
from trainexec.contract.slurm_env import MODEL_DIR_ENV, ROLES_ENV
from trainexec.contract.slurm_outcome import run_key, write_verdict

__all__ = ["MODEL_DIR_ENV", "run_task", "step_run_key"]

logger = logging.getLogger(__name__)

_FORWARDED = (signal.SIGTERM, signal.SIGINT)


def step_run_key(environ: Mapping[str, str]) -> str:
    """This run of the job: SLURM_JOB_ID and SLURM_RESTART_COUNT (0 before a requeue)."""
    return run_key(environ.get("SLURM_JOB_ID", "nojob"),
                   int(environ.get("SLURM_RESTART_COUNT", "0") or 0))


def run_task(command: Sequence[str], model_dir: str | None = None,
             environ: Mapping[str, str] | None = None) -> int:
    """Runs COMMAND as this Slurm task (see the module doc); its exit code."""
    environ = dict(os.environ if environ is None else environ)
    model_dir = model_dir or environ.get(MODEL_DIR_ENV) or None
    key = step_run_key(environ)
    node = environ.get("SLURMD_NODENAME", "")
    codes = ExitCodes.from_env(environ)
    if not command:
        print("trainexec slurm-exec: no command: write `trainexec slurm-exec -- COMMAND "
              "[ARGS...]`", file=sys.stderr)
        return 2
    try:
        step = SlurmStep.from_env(environ)
        if step is None:
            raise ConfigError(f"slurm-exec needs {ROLES_ENV} (e.g. chief=1,worker=2) to "
                              "build this task's cluster from the Slurm step")
        task = _task_name(step)
        config = ClusterConfig.from_dict(step.tf_config())
    except ConfigError as err:
        print(f"trainexec slurm-exec: {err}", file=sys.stderr, flush=True)
        task = f"rank:{environ.get('SLURM_PROCID', '?')}"
        if model_dir:
            write_verdict(model_dir, key, task, 2, node, codes)
        _cancel_step(environ, task, 2)  # the tasks placed as expected would wait forever
        return 2
    # A task held at exit by TensorFlow's shutdown is killed by its exit watchdog
    # (137); the watchdog records the code it was ending with here, and that code is
    # the task's verdict (trainexec.contract.exit_watchdog). A watchdog still writing
    # as the directory goes does not stop the verdict.
    with tempfile.TemporaryDirectory(prefix="trainexec-slurm-exits-",
                                     ignore_cleanup_errors=True) as records:
        child_env = {**environ, TF_CONFIG: config.to_json(), RECORD_DIR_ENV: records}
        child_env.pop(LAUNCH_DIR_ENV, None)  # this process starts it, not a launcher
        try:
            child = subprocess.Popen(list(command), env=child_env)
        except OSError as err:
            print(f"trainexec slurm-exec: cannot run {command[0]!r}: "
                  f"{err.strerror or err}", file=sys.stderr, flush=True)
            if model_dir:
                write_verdict(model_dir, key, task, 2, node, codes)
            return 2
        code = _wait_forwarding_signals(child)
        if killed_by_watchdog(code):
            # The task is the child itself, or a process a shell child started: in
            # this process's group either way (srun's task is not a new session).
            counted = take_outside_exit(records, task, child.pid)
            if counted is None:
                counted = take_outside_exit(records, task, os.getpgrp())
            if counted is not None:
                print(f"trainexec slurm-exec: [{task}] was ended by its exit watchdog "
                      f"while ending with {counted}: counted as {counted}",
                      file=sys.stderr, flush=True)
                code = counted
    shell_code = 128 - code if code < 0 else code
    if model_dir:
        verdict = write_verdict(model_dir, key, task, code, node, codes)
        print(f"trainexec slurm-exec: [{task}] ended {verdict.code} ({verdict.cause}) on "
              f"{node}", file=sys.stderr, flush=True)
    if shell_code != 0 and not codes.is_retryable(shell_code):
        _cancel_step(environ, task, shell_code)
    return shell_code


def _wait_forwarding_signals(child: subprocess.Popen) -> int:
    """The child's code as `subprocess` gives it; the signals Slurm sends this
    process (cancel, preemption) go on to the child meanwhile."""

    def forward(signum, _frame):
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {sig: signal.signal(sig, forward) for sig in _FORWARDED}
    try:
        return child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _task_name(step: SlurmStep) -> str:
    role, index = step.role_of(step.rank)
    return f"{role}:{index}"


def _cancel_step(environ: Mapping[str, str], task: str, code: int) -> None:
    job, step = environ.get("SLURM_JOB_ID"), environ.get("SLURM_STEP_ID")
    if not job or step is None:
        return
    print(f"trainexec slurm-exec: [{task}] exit {code} is permanent: cancelling step "
          f"{job}.{step} so that its other tasks end now", file=sys.stderr, flush=True)
    try:
        subprocess.run(["scancel", f"{job}.{step}"], timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        print(f"trainexec slurm-exec: scancel failed: {err}", file=sys.stderr, flush=True)
