"""The examples that start real processes run as written: the `launch` example
(LocalCluster from Python), the `pytest-fixture` example (a user's test module, run by
pytest), and the README's quick start through `trainexec launch`. The other examples
are tests/test_readme.py; tests/readme_examples.py finds and runs them.
"""

import os
import subprocess
import sys

import pytest

from readme_examples import ROOT, blocks, run_group

pytestmark = pytest.mark.cluster


def test_launch_example(tmp_path, monkeypatch, capsys):
    run_group("launch", tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "playing ps 0" in out and "playing evaluator 0" in out


def _env_with_this_tree():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("TF_CONFIG", None)
    return env


@pytest.mark.keras
def test_pytest_fixture_example(tmp_path, monkeypatch):
    """The guide's test module, run by pytest beside the program it names (the README's
    train.py, with 2 workers and an evaluator): it passes only if the job trained to
    max_steps in the directory the fixture gave it."""
    [program] = blocks()[1]["quickstart"]
    (tmp_path / "train.py").write_text(program)
    (tmp_path / "test_my_job.py").write_text("".join(blocks()[1]["pytest-fixture"]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_my_job.py"], cwd=tmp_path, env=_env_with_this_tree(),
                          capture_output=True, text=True, timeout=700)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


@pytest.mark.keras
def test_quickstart_program_under_trainexec_launch(tmp_path):
    """The README's train.py as a cluster, with its command as written (trainexec
    launch --workers 1 --evaluator -- python train.py DIR)."""
    [program] = blocks()[1]["quickstart"]
    (tmp_path / "train.py").write_text(program)
    bin_dir = os.path.dirname(sys.executable)  # this environment's trainexec and python
    env = _env_with_this_tree()
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    model_dir = tmp_path / "qs-cluster"
    command = ["trainexec", "launch", "--workers", "1", "--evaluator", "--timeout", "600",
               "--", "python", "train.py", "--model-dir", str(model_dir)]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=660)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "[evaluator:0] accuracy" in done.stdout and "at step 300" in done.stdout
    assert (model_dir / "trainexec" / "training_complete.json").is_file()
