"""`trainexec slurm-exec` (one task of a Slurm step, `trainexec.launch.slurm_exec`) and
`trainexec slurm-verdict` (after srun in a batch script: succeed, fail or requeue, from the
tasks' verdicts, `trainexec.contract.slurm_outcome`)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from trainexec.cluster.slurm import parse_roles
from trainexec.contract.slurm_env import ROLES_ENV
from trainexec.errors import ConfigError

__all__ = ["add_slurm_parsers"]


def add_slurm_parsers(commands: Any) -> None:
    """Adds `trainexec slurm-exec` and `trainexec slurm-verdict`."""
    run = commands.add_parser(
        "slurm-exec", help="run COMMAND as one task of a Slurm step (TF_CONFIG from the step)",
        usage="trainexec slurm-exec [--model-dir DIR] -- COMMAND [ARGS...]",
        description="Under srun with TRAINEXEC_SLURM_ROLES set: build this task's cluster "
        "from the step, run COMMAND with TF_CONFIG set to it (any tf.distribute program), "
        "pass SIGTERM on, record the task's verdict under DIR/trainexec/slurm/ and exit "
        "with COMMAND's code; a permanent exit cancels the step. Exits 2 naming the fix "
        "when the step cannot be placed (e.g. not --distribution=block).")
    run.add_argument("--model-dir", default=None, metavar="DIR",
                     help="where to record the verdict (default: $TRAINEXEC_SLURM_MODEL_DIR)")
    run.add_argument("command", nargs=argparse.REMAINDER, help="the program, after --")
    run.set_defaults(run=_run_slurm_exec)
    verdict = commands.add_parser(
        "slurm-verdict", help="after srun in a batch script: succeed, fail or requeue",
        description="Read every task's verdict of this run (SLURM_JOB_ID, "
        "SLURM_RESTART_COUNT) and print the action: succeed, fail (a permanent exit) or "
        "requeue (retryable, or a task left none, while SLURM_RESTART_COUNT < "
        "--max-restarts); exit with the contract's code (0, 1, 2, 143, 170, 171).")
    verdict.add_argument("--model-dir", default=None, metavar="DIR",
                         help="the run's model directory (default: "
                         "$TRAINEXEC_SLURM_MODEL_DIR)")
    verdict.add_argument("--max-restarts", type=int, default=3, metavar="K")
    verdict.set_defaults(run=_run_slurm_verdict)


def _run_slurm_exec(args: argparse.Namespace) -> int:
    from trainexec.launch.slurm_exec import run_task

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return run_task(command, args.model_dir)


def _run_slurm_verdict(args: argparse.Namespace) -> int:
    from trainexec.contract.exit_codes import ExitCodes
    from trainexec.contract.slurm_env import MODEL_DIR_ENV
    from trainexec.launch.slurm_exec import step_run_key
    from trainexec.contract.slurm_outcome import decide, read_verdicts

    model_dir = args.model_dir or os.environ.get(MODEL_DIR_ENV)
    try:
        if not model_dir:
            raise ConfigError(f"no model directory: pass --model-dir or set {MODEL_DIR_ENV}")
        roles = parse_roles(os.environ.get(ROLES_ENV, ""))
    except ConfigError as err:
        print(f"trainexec slurm-verdict: {err}", file=sys.stderr)
        return 2
    expected = [f"{role}:{i}" for role, count in roles for i in range(count)]
    key = step_run_key(os.environ)
    restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
    decision = decide(read_verdicts(model_dir, key), expected, restarts, args.max_restarts,
                      ExitCodes.from_env())
    print(decision.action, flush=True)
    print(f"trainexec slurm-verdict: run {key}: {decision.action}, exit "
          f"{decision.exit_code}: {decision.reason}", file=sys.stderr, flush=True)
    return decision.exit_code
