"""trainexec/lazy_exports.py: a package's names imported on first use, then cached."""

import pytest

from trainexec.lazy_exports import lazy_exports

pytestmark = pytest.mark.any_line


def test_a_name_is_imported_on_first_use_and_cached_in_the_namespace():
    namespace = {"__all__": ["dumps", "sqrt"]}
    getattr_, dir_ = lazy_exports("pkg", {"dumps": "json", "sqrt": "math"}, namespace)
    import json

    assert getattr_("dumps") is json.dumps
    assert namespace["dumps"] is json.dumps
    assert "sqrt" not in namespace
    assert dir_() == ["dumps", "sqrt"]


def test_an_unknown_name_is_an_attribute_error_naming_the_package():
    getattr_, dir_ = lazy_exports("pkg", {"dumps": "json"}, {})
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'nope'"):
        getattr_("nope")
    assert dir_() == ["dumps"]  # no __all__: the exported names


def test_a_submodule_is_imported_as_after_import_package_submodule():
    """`import trainexec` then `trainexec.exporters.FinalExporter`, in a fresh
    interpreter (where nothing imported `trainexec.exporters` before)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c",
                           "import trainexec\n"
                           "print(trainexec.exporters.FinalExporter.__name__)\n"
                           "print(trainexec.exporters is __import__('trainexec.exporters').exporters)\n"
                           "print(hasattr(trainexec, 'no_such_module'))"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["FinalExporter", "True", "False"]
