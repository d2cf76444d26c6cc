"""Every `trainexec launch` and `python PROGRAM` command of the README and the docs runs as
written (tests/doc_commands.py reads them from the pages): in a directory holding the
programs the pages name (the README's train.py), `/tmp/...` moved into it. The job must
train to its max_steps (300 for every program the pages run) in the `--model-dir` the
command gives, and a job with an evaluator must end with its final evaluation, so that
a command that trains nothing, or somewhere else, fails.

A command written on several pages runs once. A `trainexec launch --from FILE` runs
after the page's command that wrote FILE (`trainexec render tfjob ... > FILE`), as a
reader types them, for real.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from doc_commands import PROGRAMS, commands, program_text

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_STEPS = 300  # the README's train.py and the packaged example jobs


def _distinct(kinds):
    seen, found = set(), []
    for command in commands():
        if command.kind in kinds and command.text not in seen:
            seen.add(command.text)
            found.append(command)
    return found


RUNS = _distinct({"launch", "python", "launch from"})


def _written_by(command):
    """The page's command before `command` that writes the file `--from` names."""
    source = command.option("--from")
    before = [c for c in commands() if c.page == command.page and c.redirect() == source]
    assert before, f"{command.page}: nothing on the page writes {source}"
    return before[-1]


@pytest.mark.parametrize("command", RUNS, ids=lambda c: c.text.split(" -- ")[-1][:60])
def test_command_trains_to_the_end_where_it_says(command, tmp_path):
    from trainexec import read_training_complete

    for name in PROGRAMS:
        (tmp_path / name).write_text(program_text(name))
    text = command.text
    with_evaluator = "--evaluator" in command.words
    if command.kind == "launch from":
        render = _written_by(command)
        text = f"{render.text}\n{text}"
        with_evaluator = "--evaluator" in render.words
    text = text.replace("/tmp/", f"{tmp_path}/")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = ROOT
    env.pop("TF_CONFIG", None)
    done = subprocess.run(["bash", "-c", text], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    model_dir = command.option("--model-dir").replace("/tmp/", f"{tmp_path}/")
    complete = read_training_complete(model_dir)
    assert complete is not None, f"nothing trained in {model_dir}:\n{done.stdout[-3000:]}"
    assert complete.global_step >= MAX_STEPS  # a ps job's workers may overshoot
    if with_evaluator:
        assert "final evaluation (evaluator:0, step" in done.stdout, done.stdout[-3000:]
