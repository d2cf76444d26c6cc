"""The `trainexec` command as a newcomer meets it: `--version`, the full help when no
command is given, an unknown flag answered in its own subcommand's usage, and each
subcommand's help ending with an example (that parses) and its guide (that exists)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

import trainexec
from trainexec.cli import build_parser, parse_command_line
from trainexec.cli.parser import EPILOGS, subcommand_parsers

pytestmark = pytest.mark.any_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _trainexec(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("TF_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "trainexec", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_version_prints_the_package_version():
    done = _trainexec("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"trainexec {trainexec.__version__}"


def test_no_command_prints_the_full_help():
    done = _trainexec()
    assert done.returncode == 2
    for command in ("tfconfig", "launch", "render", "slurm-exec", "slurm-verdict"):
        assert command in done.stderr
    assert "example:" in done.stderr and "--version" in done.stderr


@pytest.mark.parametrize("args, usage", [
    (["launch", "--bogus", "--", "x"], "usage: trainexec launch"),
    (["render", "tfjob", "demo", "--image", "i", "--bogus", "--", "x"],
     "usage: trainexec render tfjob"),
    (["tfconfig", "--bogus"], "usage: trainexec tfconfig"),
])
def test_an_unknown_flag_is_answered_in_its_subcommands_usage(args, usage):
    done = _trainexec(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(usage), done.stderr
    assert "unrecognized arguments: --bogus" in done.stderr


def _named_parsers():
    parser = build_parser()
    named = {None: parser}
    for name, sub in subcommand_parsers(parser).items():
        named[name] = sub
        named.update({f"{name} {inner}": each
                      for inner, each in subcommand_parsers(sub).items()})
    return named


def test_every_subcommand_has_an_example_and_a_guide():
    assert set(EPILOGS) == set(_named_parsers())
    for name, sub in _named_parsers().items():
        help_text = sub.format_help()
        assert "example:\n  trainexec" in help_text or "example:\n  TF_CONFIG" in help_text \
            or "example:\n  srun trainexec" in help_text, name
        page = EPILOGS[name][1]
        assert os.path.isfile(os.path.join(ROOT, page)), f"{name}: no page {page}"


def _commands(example):
    """The `trainexec ...` command lines of an example, as argv lists."""
    for line in example.replace("\\\n", " ").splitlines():
        line = line.split(" #")[0].split(" > ")[0]
        words = shlex.split(line)
        while words and ("=" in words[0] or words[0] == "srun"):
            words = words[1:]  # VAR=value, srun
        assert words[0] == "trainexec", example
        yield words[1:]


@pytest.mark.parametrize("name", sorted(EPILOGS, key=str))
def test_every_example_parses(name):
    parser = build_parser()
    for argv in _commands(EPILOGS[name][0]):
        args = parse_command_line(parser, argv)
        assert callable(args.run), argv
