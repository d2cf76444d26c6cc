"""The public surface: every exported name loads, without tensorflow_estimator."""

import importlib.metadata
import json
import pathlib
import subprocess
import sys
import urllib.parse

import pytest

import trainexec

pytestmark = pytest.mark.tf_line


def test_public_names_resolve_without_tensorflow_estimator():
    code = ("import sys, trainexec\n"
            "assert 'tensorflow' not in sys.modules, 'import trainexec loaded TensorFlow'\n"
            "for name in trainexec.__all__: getattr(trainexec, name)\n"
            "assert 'tensorflow_estimator' not in sys.modules\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_unknown_name_is_an_attribute_error():
    try:
        trainexec.NoSuchThing
    except AttributeError as err:
        assert "NoSuchThing" in str(err)
    else:
        raise AssertionError("expected AttributeError")


# -- one version: trainexec/__init__.py sets it, setup.py and the installed package say it --
ROOT = pathlib.Path(__file__).resolve().parent.parent


def _installed_from_this_tree() -> str | None:
    """Why the installed trainexec's metadata is not this tree's (None when it is)."""
    try:
        dist = importlib.metadata.distribution("trainexec")
    except importlib.metadata.PackageNotFoundError:
        return "trainexec is not installed"
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct.get("dir_info", {}).get("editable"):
        source = pathlib.Path(urllib.parse.urlparse(direct["url"]).path).resolve()
        return None if source == ROOT else f"trainexec is installed editable from {source}"
    installed = dist.locate_file("trainexec/__init__.py")
    return (None if pathlib.Path(installed).resolve() == pathlib.Path(trainexec.__file__).resolve()
            else f"the installed trainexec is {installed}, the imported one {trainexec.__file__}")


def test_setup_py_reads_the_packages_version():
    done = subprocess.run([sys.executable, "setup.py", "--version"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == trainexec.__version__


def test_installed_version_is_the_packages():
    reason = _installed_from_this_tree()
    if reason:
        pytest.skip(f"{reason}: its metadata is not this tree's (setup.py's is checked above)")
    assert trainexec.__version__ == importlib.metadata.version("trainexec")
