"""A copy of the suite's frame, for tests that collect probe files with the suite's
own rules: tests/conftest.py, the tests/ modules it imports (found by reading its
imports, so a new one is copied too) and pytest.ini."""

from __future__ import annotations

import ast
import pathlib
import shutil

TESTS = pathlib.Path(__file__).resolve().parent


def _conftest_helpers() -> list[str]:
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    names = {alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    return sorted(f"{name}.py" for name in names if (TESTS / f"{name}.py").is_file())


def copy_to(root: pathlib.Path) -> pathlib.Path:
    """Copies the frame under `root` (`root`/pytest.ini, `root`/tests/conftest.py and
    its helpers); returns `root`/tests."""
    tests = root / "tests"
    tests.mkdir(parents=True, exist_ok=True)
    for name in ["conftest.py", *_conftest_helpers()]:
        shutil.copy(TESTS / name, tests / name)
    shutil.copy(TESTS.parent / "pytest.ini", root / "pytest.ini")
    return tests
