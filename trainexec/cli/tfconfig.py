"""`trainexec tfconfig`: how this process's TF_CONFIG is understood (exit 2 if malformed)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from trainexec.cluster.config import ClusterConfig
from trainexec.cluster.slurm import slurm_roles_set
from trainexec.cluster.verdicts import explain, trainer_support
from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV
from trainexec.errors import ConfigError
from trainexec.cli.installation import Installation

__all__ = ["add_tfconfig_parser"]


def add_tfconfig_parser(commands: Any) -> argparse.ArgumentParser:
    """Adds `trainexec tfconfig` to the `trainexec` subcommands."""
    tfconfig = commands.add_parser(
        "tfconfig", help="show the parsed TF_CONFIG and this task's role",
        description="Parse TF_CONFIG from the environment and show which producer's "
        "shape it has (Kubeflow TFJob, its enableDynamicWorker sparse form, SageMaker's "
        "parameter server mode with a master, workers only, trainexec launch, or "
        "generic), what trainexec rewrote, the cluster, this task's role, and whether "
        "an Estimator or a Keras trainer can train that cluster. Exits 2 with the "
        "reason when TF_CONFIG is malformed or this task cannot run in it.")
    tfconfig.add_argument("--json", action="store_true",
                          help="print the normalised TF_CONFIG trainexec hands on instead "
                          "(empty jobs left out: TF 2.15's RunConfig fails on them for "
                          "some tasks; a sparse job as {\"<index>\": \"host:port\"}, "
                          "a ps that sees only itself at its own index)")
    tfconfig.set_defaults(run=_run_tfconfig)
    return tfconfig


def _run_tfconfig(args: argparse.Namespace) -> int:
    try:
        config = ClusterConfig.from_env()
    except ConfigError as err:
        print(f"trainexec: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(config.to_json())
        return 0
    slurm = slurm_roles_set(os.environ) and not os.environ.get("TF_CONFIG", "").strip()
    print(explain(config, launched=LAUNCH_DIR_ENV in os.environ, slurm=slurm))
    if trainer_support(config):  # the shape's verdicts, then what this machine can run
        notes = Installation.detect().notes()
        if notes:
            print("on this installation:")
            for trainer, note in notes.items():
                print(f"  {trainer}: {note}")
    return 0
