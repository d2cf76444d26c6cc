"""The README's install lines run as written, from a fresh copy of the repository (the
files git tracks, as a clone has them), in new virtual environments: one as Python makes
it, one with `wheel` installed too (where, before pyproject.toml, pip built with the
venv's own setuptools 65 and lost the license). In the venv with `wheel`,
`pip install ".[k8s]"` installs for real (TensorFlow included, from pip's cache) and the
other lines are resolved (`--dry-run`); in the new venv trainexec alone is installed for
real (`--no-deps`: the same build, TensorFlow neither resolved nor installed twice). The
installed metadata carries `License-Expression: Apache-2.0` in both, and the fully
installed `trainexec --help` names a `trainexec docs` command that prints the Getting
started page from the installed copy (no checkout needed).

About two minutes: one environment installs TensorFlow."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv

import pytest

from doc_commands import commands

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALL_LINES = [c.text.split("#")[0].strip() for c in commands()
                 if c.page == "README.md" and c.text.startswith("pip install ")]
REAL = 'pip install ".[k8s]"'


def _fresh_copy(target):
    """The files a clone of this repository has (tracked ones, as in the work tree)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = os.path.join(ROOT, name)
        if os.path.isfile(source):
            os.makedirs(os.path.join(target, os.path.dirname(name)), exist_ok=True)
            shutil.copy2(source, os.path.join(target, name))


def _run(line, venv_dir, cwd, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.path.join(venv_dir, "bin") + os.pathsep + env.get("PATH", "")
    done = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def test_the_readme_has_the_lines_this_test_runs():
    assert REAL in INSTALL_LINES
    assert {"pip install .", 'pip install ".[tf-keras]"', 'pip install ".[estimator]"'
            } <= set(INSTALL_LINES)


@pytest.mark.parametrize("with_wheel", [False, True], ids=["new-venv", "venv-with-wheel"])
def test_the_readme_install_lines_run_as_written(tmp_path, with_wheel):
    checkout, env_dir = tmp_path / "trainexec", tmp_path / "venv"
    _fresh_copy(checkout)
    venv.EnvBuilder(with_pip=True).create(env_dir)
    if with_wheel:
        _run("pip install --quiet wheel", env_dir, tmp_path)
    if with_wheel:  # the README's lines: the others resolved, the k8s one installed
        for line in INSTALL_LINES:
            if line != REAL:
                _run(line.replace("pip install", "pip install --dry-run --quiet", 1),
                     env_dir, checkout)
        _run(REAL, env_dir, checkout)
    else:  # the same build, in a venv as Python makes it
        _run("pip install --quiet --no-deps .", env_dir, checkout)

    # What the installed distribution says, read in the new environment, away from the copy.
    shutil.rmtree(checkout)
    # The METADATA file as installed (`metadata(...).as_string()` cannot print it: the
    # README body comes back as a multi-line header).
    metadata = _run("python -c 'import importlib.metadata as m; "
                    "print(m.distribution(\"trainexec\").read_text(\"METADATA\"))'",
                    env_dir, tmp_path).stdout
    assert "License-Expression: Apache-2.0" in metadata
    assert re.search(r"^Requires-Dist: pyyaml", metadata, re.M | re.I)
    if not with_wheel:
        return  # the commands need the dependencies, which only the other venv installed

    helped = " ".join(_run("trainexec --help", env_dir, tmp_path).stdout.split())
    match = re.search(r"guide: (trainexec docs \S+)", helped)
    assert match, helped[-400:]
    page = _run(match.group(1), env_dir, tmp_path).stdout
    assert page.startswith("# Getting started\n")
    with open(os.path.join(ROOT, "docs", "getting-started.md"), encoding="utf-8") as f:
        assert page == f.read()
    listed = _run("trainexec docs", env_dir, tmp_path).stdout
    assert "share/doc/trainexec" in listed and "guides/kubernetes" in listed
