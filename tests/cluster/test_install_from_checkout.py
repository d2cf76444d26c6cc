"""The README's install lines run as written, from a fresh copy of the repository (the
files git tracks, as a clone has them), in new virtual environments:

* one as Python makes it: every README line resolved in full (`--dry-run`, side by
  side, each from its own copy: TensorFlow and the rest chosen from the index, nothing
  unpacked), then trainexec alone installed for real (`--no-deps`);
* one with `wheel` installed too (where, before pyproject.toml, pip built with the
  venv's own setuptools 65 and lost the license), over the TensorFlow this test runs on
  (its site-packages on the path, as in an image that ships TensorFlow):
  `pip install ".[k8s]"` installs trainexec for real into the new venv (the outer
  environment's own trainexec is left alone: pip does not uninstall outside the venv).

The installed metadata carries `License-Expression: Apache-2.0` in both, and the fully
installed `trainexec --help` names a `trainexec docs` command that prints the Getting
started page from the installed copy (no checkout needed); both are the new venv's copy.

About 45 s: TensorFlow is resolved, not unpacked again (that took 70 s here)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
import venv

import pytest

from doc_commands import commands

# untimed: nothing here is timed (generous timeouts only): runs beside the cluster tests
pytestmark = [pytest.mark.cluster, pytest.mark.any_line, pytest.mark.untimed]

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


def _venv_env(venv_dir):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.path.join(venv_dir, "bin") + os.pathsep + env.get("PATH", "")
    return env


def _run(line, venv_dir, cwd, timeout=900):
    done = subprocess.run(["bash", "-c", line], cwd=cwd, env=_venv_env(venv_dir),
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _run_side_by_side(lines, venv_dir, checkouts, timeout=900):
    """`_run` for each line, all at once (pip resolving is one core's work each), each
    in its own copy of the checkout (setuptools writes trainexec.egg-info there)."""
    started = []
    failed = []
    try:
        for line, checkout in zip(lines, checkouts, strict=True):
            started.append((line, subprocess.Popen(
                ["bash", "-c", line], cwd=checkout, env=_venv_env(venv_dir),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for line, process in started:
            output, _ = process.communicate(timeout=timeout)
            if process.returncode != 0:
                failed.append(f"{line} (exit {process.returncode})\n{output[-3000:]}")
    finally:
        for _, process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert failed == []


def test_the_readme_has_the_lines_this_test_runs():
    assert REAL in INSTALL_LINES
    assert {"pip install .", 'pip install ".[tf-keras]"', 'pip install ".[estimator]"'
            } <= set(INSTALL_LINES)


def _over_this_tensorflow(env_dir):
    """The new venv sees the site-packages of the one running this test (TensorFlow
    and its dependencies installed), after its own."""
    (site,) = env_dir.glob("lib/python*/site-packages")
    paths = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "this_tensorflow.pth").write_text("".join(f"{path}\n" for path in paths))


@pytest.mark.parametrize("with_wheel", [False, True], ids=["new-venv", "venv-with-wheel"])
def test_the_readme_install_lines_run_as_written(tmp_path, with_wheel):
    checkout, env_dir = tmp_path / "trainexec", tmp_path / "venv"
    _fresh_copy(checkout)
    venv.EnvBuilder(with_pip=True).create(env_dir)
    if with_wheel:  # the k8s line installed for real, beside an installed TensorFlow
        _run("pip install --quiet wheel", env_dir, tmp_path)
        _over_this_tensorflow(env_dir)
        _run(REAL, env_dir, checkout)
    else:  # every line resolved in a venv as Python makes it; the same build installed
        copies = [tmp_path / f"copy-{index}" for index in range(len(INSTALL_LINES))]
        for copy in copies:
            _fresh_copy(copy)
        _run_side_by_side([line.replace("pip install", "pip install --dry-run --quiet", 1)
                           for line in INSTALL_LINES], env_dir, copies)
        _run("pip install --quiet --no-deps .", env_dir, checkout)

    # What the installed distribution says, read in the new environment, away from the copy.
    shutil.rmtree(checkout)
    # The METADATA file as installed (`metadata(...).as_string()` cannot print it: the
    # README body comes back as a multi-line header).
    where, direct_url, metadata = _run(
        "python -c 'import importlib.metadata as m; d = m.distribution(\"trainexec\"); "
        "print(d.locate_file(\"\")); print(d.read_text(\"direct_url.json\") or \"{}\"); "
        "print(d.read_text(\"METADATA\"))'", env_dir, tmp_path).stdout.split("\n", 2)
    # The new venv's own copy, installed from the checkout, not an editable one.
    assert os.path.realpath(where).startswith(os.path.realpath(env_dir)), where
    assert '"editable": true' not in direct_url, direct_url
    assert "License-Expression: Apache-2.0" in metadata
    assert re.search(r"^Requires-Dist: pyyaml", metadata, re.M | re.I)
    if not with_wheel:
        return  # the commands need the dependencies, which only the other venv installed

    assert shutil.which("trainexec", path=str(env_dir / "bin")), "no trainexec script"
    helped = " ".join(_run("trainexec --help", env_dir, tmp_path).stdout.split())
    match = re.search(r"guide: (trainexec docs \S+)", helped)
    assert match, helped[-400:]
    page = _run(match.group(1), env_dir, tmp_path).stdout
    assert page.startswith("# Getting started\n")
    with open(os.path.join(ROOT, "docs", "getting-started.md"), encoding="utf-8") as f:
        assert page == f.read()
    listed = _run("trainexec docs", env_dir, tmp_path).stdout
    assert "share/doc/trainexec" in listed and "guides/kubernetes" in listed
