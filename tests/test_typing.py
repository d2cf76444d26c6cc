"""The public API as a user's type checker sees it (`py.typed`, PEP 561).

mypy (the `test` extra installs it) checks two user-style programs with
tests/typing/mypy.ini (`--strict` on the user's code, trainexec's annotations followed
but its internals not checked, TensorFlow untyped), from the repository root so that it
reads this working tree:

* tests/typing/good_user_script.py, a correct program (KerasTrainer, TrainSpec, EvalSpec,
  train_and_evaluate and its `TrainResult | None`, an Estimator, LocalCluster and
  JobResult, SidecarEvaluator): no error. Its `assert_type` lines fail if a public name
  or result becomes `Any`;
* tests/typing/bad_user_script.py, one mistake a line, each line ending in
  `# E: <message>`: mypy must report exactly those errors, by line and message (a `str`
  as `save_checkpoints_steps`, `result.metrics` without the None check, ...). An
  annotation that regressed to `Any` loses its error, and the test fails.

The scripts are checked, never run, and not collected (their names are not `test_*`).
The directory tests/typing/ has no `__init__.py`, and must not get one: tests/ is on
`sys.path` (conftest.py), where a regular package named `typing` would shadow the
standard library's.

Without mypy (an environment installed without the `test` extra) these tests skip,
saying so; `test_lazy_names_are_visible_to_type_checkers` needs no mypy.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.any_line

ROOT = pathlib.Path(__file__).resolve().parent.parent
TYPING = ROOT / "tests" / "typing"
CONFIG = TYPING / "mypy.ini"
GOOD = TYPING / "good_user_script.py"
BAD = TYPING / "bad_user_script.py"

# The packages that re-export lazily (`trainexec.lazy_exports`, PEP 562 `__getattr__`):
# a type checker sees their names only through the imports under `if TYPE_CHECKING:`.
LAZY_PACKAGES = ["trainexec", "trainexec.cluster", "trainexec.estimator", "trainexec.jobs",
                 "trainexec.launch"]

ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*?)(?:  \[[\w-]+\])?$")
EXPECTED = re.compile(r"\S  # E: (?P<message>.*)$")  # code, then the comment

needs_mypy = pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed in this environment (the `test` extra installs it: "
           "pip install -e '.[test]'); the public API's types are not checked here")


@functools.lru_cache(maxsize=None)
def mypy_errors() -> tuple[str, dict[str, list[tuple[int, str]]]]:
    """mypy's whole output over both scripts, and its errors by script name: (line,
    message) pairs, error codes and notes left out. One run serves every test."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("MYPYPATH", "MYPY_CONFIG_FILE_DIR", "PYTHONPATH")}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(CONFIG),
         GOOD.relative_to(ROOT).as_posix(), BAD.relative_to(ROOT).as_posix()],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    # 1: errors were found (the bad script's); anything else means mypy itself failed.
    assert done.returncode == 1, f"mypy exited {done.returncode}:\n{output}"
    assert "checked 2 source files" in output, output
    errors: dict[str, list[tuple[int, str]]] = {GOOD.name: [], BAD.name: []}
    for line in output.splitlines():
        match = ERROR.match(line)
        if match:
            name = pathlib.Path(match["path"]).name
            errors.setdefault(name, []).append((int(match["line"]), match["message"]))
    return output, errors


def expected_errors() -> list[tuple[int, str]]:
    """(line, message) of each `# E: <message>` in the bad script."""
    lines = BAD.read_text(encoding="utf-8").splitlines()
    return [(number, match["message"]) for number, text in enumerate(lines, 1)
            if (match := EXPECTED.search(text))]


@needs_mypy
def test_a_correct_user_program_is_clean():
    output, errors = mypy_errors()
    assert errors[GOOD.name] == [], output


@needs_mypy
def test_each_user_mistake_is_reported_by_line_and_message():
    output, errors = mypy_errors()
    expected = expected_errors()
    assert len(expected) >= 15  # the script's marks were read
    missing = [error for error in expected if error not in errors[BAD.name]]
    unexpected = [error for error in errors[BAD.name] if error not in expected]
    assert (missing, unexpected) == ([], []), (
        f"bad_user_script.py: errors mypy did not report (a type became Any?): "
        f"{missing}; errors not marked `# E:` in the script: {unexpected}\n{output}")
    assert not [name for name in errors if name not in (GOOD.name, BAD.name)], output


@needs_mypy
@pytest.mark.parametrize("call, message", [
    ('save_checkpoints_steps="100"',
     'Argument "save_checkpoints_steps" to "KerasTrainer" has incompatible type "str"; '
     'expected "int"'),
    ('print(result.metrics["loss"])',
     'Item "None" of "TrainResult | None" has no attribute "metrics"'),
])
def test_the_issues_examples_are_errors(call, message):
    """The two mistakes issue 34 names: a `str` for `save_checkpoints_steps`, and reading
    `result.metrics` where `train_and_evaluate` returned None (every role but a local run
    and the evaluator)."""
    [line] = [number for number, text in enumerate(BAD.read_text().splitlines(), 1)
              if call in text]
    output, errors = mypy_errors()
    assert (line, message) in errors[BAD.name], output


def _type_checking_names(tree: ast.Module) -> set[str]:
    """The names bound by the imports under the module's `if TYPE_CHECKING:`."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, (ast.Import, ast.ImportFrom)):
                    names.update(alias.asname or alias.name for alias in statement.names)
    return names


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_names_are_visible_to_type_checkers(package):
    """Each public name of a lazy package is imported under `if TYPE_CHECKING:` (the
    module `__getattr__` is hidden from checkers, so a name missing there is an error
    for users, not `Any`), without importing TensorFlow at run time."""
    module = importlib.import_module(package)
    tree = ast.parse(pathlib.Path(module.__file__).read_text(encoding="utf-8"))
    assert sorted(set(module.__all__) - _type_checking_names(tree)) == []
