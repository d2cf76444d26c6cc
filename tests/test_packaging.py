"""The package as pip and a typed user meet it: `pip wheel .` gives a wheel with the
license, the README as its long description, classifiers, `python_requires` and
`py.typed` (so type checkers read trainexec's annotations)."""

from __future__ import annotations

import pytest
import email
import os
import subprocess
import sys
import zipfile

pytestmark = pytest.mark.any_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_wheel_says_what_the_package_is(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                           "--wheel-dir", str(tmp_path), ROOT],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [wheel] = [name for name in os.listdir(tmp_path) if name.endswith(".whl")]
    with zipfile.ZipFile(tmp_path / wheel) as archive:
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
    classifiers = metadata.get_all("Classifier")
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert metadata["Description-Content-Type"] == "text/markdown"
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert metadata.get_payload().strip() == readme.strip()
