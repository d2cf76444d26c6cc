"""The `trainexec` command (also `python -m trainexec`).

Subcommands:
  tfconfig   show how this process's TF_CONFIG is understood (exit 2 if malformed)
  launch     start a whole cluster on this machine (see `trainexec launch --help`),
             or a Kubeflow TFJob manifest's (`--from FILE.yaml`)
  render     print a job as a Kubeflow TFJob (with a NetworkPolicy), a Vertex AI
             CustomJob or a Slurm batch script (see `trainexec render tfjob --help`)
  slurm-exec     run COMMAND as one task of a Slurm step, with TF_CONFIG from the step
                 and its verdict recorded (`trainexec.launch.slurm_exec`)
  slurm-verdict  in a batch script after srun: succeed, fail or requeue, from the
                 tasks' verdicts (`trainexec.contract.slurm_outcome`)
  docs       list the guides, or print one (they travel in the wheel)

Modules:

* `parser`: `build_parser`, the whole command's parser, from each subcommand's module;
* `tfconfig`: `trainexec tfconfig`; `installation`: what this installation can train
  (TensorFlow's line, tf.estimator, tf_keras), which it adds;
* `launch`: `trainexec launch` (role flags or `--from FILE.yaml`), running a `LocalCluster`
  to its end;
* `render`: `trainexec render tfjob|vertex|sbatch`;
* `slurm`: `trainexec slurm-exec` and `trainexec slurm-verdict`;
* `docs`: `trainexec docs [PAGE]`, the guides from a checkout's docs/ or the wheel's copy;
* `role_flags`: --workers, --ps, --evaluator, --no-chief, shared by launch and render.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from trainexec.cli.parser import build_parser, chosen_parser

__all__ = ["build_parser", "main", "parse_command_line"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # `trainexec` alone: what it can do, not only that a command is missing
        parser.print_help(sys.stderr)
        return 2
    args = parse_command_line(parser, argv)
    return args.run(args)


def parse_command_line(parser: argparse.ArgumentParser,
                       argv: list[str]) -> argparse.Namespace:
    """`argv` parsed; an unknown flag is reported in the usage of the subcommand given
    (exit 2), not the whole command's."""
    command = None
    if argv[:1] in (["render"], ["slurm-exec"]) and "--" in argv:  # NAME is positional: split COMMAND off first
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1:]
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        chosen_parser(parser, argv).error(f"unrecognized arguments: {' '.join(unknown)}")
    if command is not None:
        args.command = command
    return args


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
