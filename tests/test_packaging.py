"""The package as pip and a typed user meet it: `pip wheel .` gives a wheel with the
license, the README as its long description, classifiers, `python_requires` and
`py.typed` (so type checkers read trainexec's annotations), and the guides that
`trainexec docs` prints. It does so whatever the building environment holds: in a new
venv where `wheel` and Python 3.11's own setuptools 65 are installed, pip still builds
with the setuptools pyproject.toml asks for, which writes `License-Expression`.

The README's install lines, run as written from a copy of the repository in new venvs
(with and without `wheel`), are tests/cluster/test_install_from_checkout.py."""

from __future__ import annotations

import pytest
import email
import os
import subprocess
import sys
import tomllib
import venv
import zipfile

pytestmark = pytest.mark.any_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pip(python, *args, cwd=None):
    done = subprocess.run([python, "-m", "pip", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel `pip wheel .` builds in a new venv that has `wheel` installed (the
    environment in which, without pyproject.toml, pip used the venv's setuptools)."""
    where = tmp_path_factory.mktemp("packaging")
    venv.EnvBuilder(with_pip=True).create(where / "venv")
    python = str(where / "venv" / "bin" / "python")
    _pip(python, "install", "--quiet", "wheel")
    _pip(python, "wheel", "--no-deps", "--quiet", "--wheel-dir", str(where / "dist"), ROOT)
    [name] = [n for n in os.listdir(where / "dist") if n.endswith(".whl")]
    return where / "dist" / name


def test_pyproject_declares_a_setuptools_that_writes_license_expression():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        system = tomllib.load(f)["build-system"]
    assert system["build-backend"] == "setuptools.build_meta"
    # PEP 639's License-Expression: setuptools 77 and later.
    assert "setuptools>=77" in system["requires"]


def test_the_wheel_says_what_the_package_is(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(metadata_name))
        [license_name] = [n for n in names if n.endswith("/LICENSE")]
        license_text = archive.read(license_name).decode()
    assert "trainexec/py.typed" in names
    assert "Apache License" in license_text and "Version 2.0" in license_text
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Requires-Python"] == ">=3.10"
    assert metadata["Author"]
    assert not metadata.get_all("Project-URL")  # none is true yet
    classifiers = metadata.get_all("Classifier")
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert metadata["Description-Content-Type"] == "text/markdown"
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert metadata.get_payload().strip() == readme.strip()


def test_the_wheel_carries_the_guides_trainexec_docs_prints(wheel):
    from trainexec.cli.docs import doc_pages

    prefix = ".data/data/share/doc/trainexec/"
    with zipfile.ZipFile(wheel) as archive:
        carried = {n.partition(prefix)[2] for n in archive.namelist() if prefix in n}
    wanted = {path.relative_to(os.path.join(ROOT, "docs")).as_posix()
              for path in doc_pages().values()}
    assert "getting-started.md" in carried and "guides/kubernetes.md" in carried
    assert carried == wanted
