"""The `trainexec` command's argument parser: every subcommand's, from its module."""

from __future__ import annotations

import argparse

from trainexec.cli.launch import add_launch_parser
from trainexec.cli.render import add_render_parser
from trainexec.cli.slurm import add_slurm_parsers
from trainexec.cli.tfconfig import add_tfconfig_parser

__all__ = ["build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The `trainexec` command's parser: one subcommand per module of `trainexec.cli`."""
    parser = argparse.ArgumentParser(
        prog="trainexec",
        description="TF_CONFIG-aware distributed task runner for TensorFlow.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    add_tfconfig_parser(commands)
    add_launch_parser(commands)
    add_render_parser(commands)
    add_slurm_parsers(commands)
    return parser
