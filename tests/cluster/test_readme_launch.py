"""The examples that start real processes run as written: the `launch` example
(LocalCluster from Python) and the `pytest-fixture` example (a user's test module, run by
pytest). The other examples are tests/test_readme.py (tests/readme_examples.py finds and
runs them); the shell commands, the README's `trainexec launch` of its train.py among them,
are tests/cluster/test_doc_commands_run.py.
"""

import os
import subprocess
import sys

import pytest

from readme_examples import ROOT, blocks, run_group

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]


def test_launch_example(tmp_path, monkeypatch, capsys):
    run_group("launch", tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "playing ps 0" in out and "playing evaluator 0" in out


def _env_with_this_tree():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("TF_CONFIG", None)
    return env


@pytest.mark.full_lines
@pytest.mark.keras
def test_pytest_fixture_example(tmp_path, monkeypatch):
    """The guide's test module, run by pytest beside the program it names (the README's
    train.py, with 2 workers and an evaluator): it passes only if the job trained to
    max_steps in the directory the fixture gave it, and, with a worker killed by
    `LocalCluster.kill` while it trained, recovered with one group restart."""
    [program] = blocks()[1]["quickstart"]
    (tmp_path / "train.py").write_text(program)
    (tmp_path / "test_my_job.py").write_text("".join(blocks()[1]["pytest-fixture"]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_my_job.py"], cwd=tmp_path, env=_env_with_this_tree(),
                          capture_output=True, text=True, timeout=1300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
