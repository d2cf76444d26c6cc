"""The `trainexec` command (also `python -m trainexec`).

Subcommands:
  tfconfig   show how this process's TF_CONFIG is understood (exit 2 if malformed)
  launch     start a whole cluster on this machine (see `trainexec launch --help`)
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from trainexec.cluster import ClusterConfig
from trainexec.errors import ConfigError

__all__ = ["main"]


def _run_tfconfig(args: argparse.Namespace) -> int:
    try:
        config = ClusterConfig.from_env()
    except ConfigError as err:
        print(f"trainexec: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(config.to_json())
    else:
        print(config.explain())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainexec",
        description="TF_CONFIG-aware distributed task runner for TensorFlow.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    tfconfig = commands.add_parser(
        "tfconfig", help="show the parsed TF_CONFIG and this task's role",
        description="Parse TF_CONFIG from the environment and show the cluster and "
        "this task's role. Exits 2 with the reason when TF_CONFIG is malformed.")
    tfconfig.add_argument("--json", action="store_true",
                          help="print the normalised TF_CONFIG instead")
    tfconfig.set_defaults(run=_run_tfconfig)
    try:
        from trainexec import launch
    except ImportError:  # pragma: no cover - launch is part of the package
        launch = None
    if launch is not None and hasattr(launch, "add_cli_parser"):
        launch.add_cli_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
