"""The layout rules the package keeps (CONTRIBUTING.md, "Repository layout"): at most 14
modules flat in trainexec/ (besides `__init__.py`), and no module over 450 lines, so that a
reader finds where a thing happens from file names and reads one concept per module."""

import pathlib

import pytest

pytestmark = pytest.mark.any_line

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "trainexec"
MAX_FLAT_MODULES = 14
MAX_LINES = 450


def test_at_most_14_modules_flat_in_the_package():
    flat = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert len(flat) <= MAX_FLAT_MODULES, (
        f"{len(flat)} modules flat in trainexec/ (the rule is at most {MAX_FLAT_MODULES}): "
        f"{flat}; move one into the package whose concept it serves")


def test_no_module_is_over_450_lines():
    long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, (f"modules over {MAX_LINES} lines (usually two concepts: split by "
                        f"concept): {long}")
