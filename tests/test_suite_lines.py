"""Every test file says where its result can differ, so each test runs where it matters.

The rule (CONTRIBUTING.md, "Test lines"): a test file's module-level `pytestmark` names
exactly one of

* `tf_line`: the result may differ by TensorFlow line or Keras version (it drives
  TensorFlow, Keras or an Estimator through trainexec): it runs on current TensorFlow
  and again on TensorFlow 2.15 (line 3); its `keras` tests run again under tf_keras;
* `any_line`: the result cannot depend on the line (pure Python, the launcher's process
  handling, parsing and rendering, docs, the bed's plumbing): it runs once, on current
  TensorFlow. A test in such a file that does depend on the line adds `tf_line` itself.

`estimator` tests run on line 3 whatever their file says (they need tf.estimator).
Read with `ast` only: nothing is imported.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

pytestmark = pytest.mark.any_line

ROOT = pathlib.Path(__file__).resolve().parent
WHERE = ("tf_line", "any_line")


def _test_files() -> list[pathlib.Path]:
    return sorted([*ROOT.glob("test_*.py"), *(ROOT / "cluster").glob("test_*.py")])


def declared(path: pathlib.Path) -> list[str]:
    """The where-markers the file's module-level `pytestmark` names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        if not any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            continue
        for sub in ast.walk(node):
            if (isinstance(sub, ast.Attribute) and sub.attr in WHERE
                    and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark"):
                found.append(sub.attr)
    return found


def test_every_test_file_says_where_its_result_can_differ():
    wrong = {}
    for path in _test_files():
        where = declared(path)
        if len(where) != 1:
            wrong[str(path.relative_to(ROOT.parent))] = where
    assert wrong == {}, (
        "each test file's module-level pytestmark names exactly one of "
        "pytest.mark.tf_line (drives TensorFlow, Keras or an Estimator: runs on every "
        "line) or pytest.mark.any_line (cannot differ by line: runs once); these do not "
        f"(what they name): {wrong}")


def test_the_reader_sees_lists_and_single_marks(tmp_path):
    one = tmp_path / "test_one.py"
    one.write_text("import pytest\npytestmark = pytest.mark.any_line\n")
    listed = tmp_path / "test_listed.py"
    listed.write_text("import pytest\npytestmark = [pytest.mark.cluster,\n"
                      "              pytest.mark.tf_line]\n")
    none = tmp_path / "test_none.py"
    none.write_text("import pytest\n\ndef test_x():\n    pytestmark = pytest.mark.tf_line\n")
    assert (declared(one), declared(listed), declared(none)) == (
        ["any_line"], ["tf_line"], [])




def _collected(env: dict, paths: list[str], *args: str) -> set[str]:
    import os
    import subprocess
    import sys
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
         *args, *(str(ROOT / "cluster" / path) for path in paths)],
        env={**os.environ, "TRAINEXEC_KERAS_TESTS_ONLY": "",
             "TRAINEXEC_TF_LINE_TESTS_ONLY": "", **env},
        cwd=ROOT.parent, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return {line.split("::")[-1] for line in out.stdout.splitlines() if "::" in line}


# Small files to collect: a kept test and a `full_lines` one each run selects (run 2
# only `keras` tests).
_KEPT = "test_each_way_a_task_ends_has_its_code[done-0-None]"


@pytest.mark.parametrize("repeat_run, paths, extra", [
    ({"TRAINEXEC_KERAS_TESTS_ONLY": "1"},
     ["test_exit_codes_processes.py", "test_readme_launch.py"],
     "test_pytest_fixture_example"),
    ({"TRAINEXEC_TF_LINE_TESTS_ONLY": "1"},
     ["test_exit_codes_processes.py", "test_keras_trainer_clusters.py"],
     "test_a_restarted_parameter_server_chief_resumes_at_its_last_saved_step"),
], ids=["tf_keras", "tf2.15"])
def test_runs_2_and_3_repeat_the_coverage_subset_and_the_rest_when_asked(
        repeat_run, paths, extra):
    assert {_KEPT, extra} <= _collected({}, paths, "-m", "cluster")  # run 1: every test
    repeated = _collected(repeat_run, paths, "-m", "cluster")
    assert _KEPT in repeated and extra not in repeated
    assert {_KEPT, extra} <= _collected(repeat_run, paths, "-m", "cluster or full_lines")


# A `full_suite` test (its promise covered by a default one) runs in no run unless asked.
_FULL_SUITE = "test_a_platform_can_set_its_own_codes"


@pytest.mark.parametrize("run", [{}, {"TRAINEXEC_TF_LINE_TESTS_ONLY": "1"}],
                         ids=["run-1", "tf2.15"])
def test_full_suite_tests_run_only_when_asked(run):
    paths = ["test_exit_codes_processes.py"]
    by_default = _collected(run, paths, "-m", "cluster")
    assert _KEPT in by_default and _FULL_SUITE not in by_default
    assert {_KEPT, _FULL_SUITE} <= _collected(run, paths, "-m", "cluster or full_suite")


def _collect_probe(tmp_path, name: str, body: str, env: dict) -> tuple[int, str]:
    """Collects one probe file in a copy of the suite's frame (conftest.py and its helpers,
    pytest.ini) under tmp_path, never in tests/cluster/ itself: a cluster part running
    meanwhile (scripts/test.sh runs the no-cluster tests beside it) would collect it."""
    import os
    import subprocess
    import sys

    import suite_frame
    probes = suite_frame.copy_to(tmp_path) / "cluster"
    probes.mkdir()
    marked = probes / name
    marked.write_text(body)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
         str(marked)], env={**os.environ, **env}, cwd=tmp_path, capture_output=True,
        text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


@pytest.mark.parametrize("marks, words", [
    ("@pytest.mark.full_suite\n", "give covered_by="),
    ("@pytest.mark.estimator\n@pytest.mark.full_suite(covered_by='test_y')\n",
     "an `estimator` test runs on every line it can"),
], ids=["no-covered-by", "estimator"])
def test_a_full_suite_test_must_name_its_cover_and_not_be_an_estimator_test(
        tmp_path, marks, words):
    code, said = _collect_probe(
        tmp_path, "test_zz_full_suite_probe.py",
        "import pytest\npytestmark = [pytest.mark.cluster, pytest.mark.any_line]"
        f"\n\n{marks}def test_x():\n    pass\n", {})
    assert code != 0
    assert words in said, said[-2000:]


def test_an_estimator_test_marked_full_lines_stops_the_run(tmp_path):
    code, said = _collect_probe(
        tmp_path, "test_zz_full_lines_estimator_probe.py",
        "import pytest\npytestmark = [pytest.mark.cluster, pytest.mark.any_line]"
        "\n\n@pytest.mark.estimator\n@pytest.mark.full_lines\ndef test_x():\n    pass\n",
        {"TRAINEXEC_TF_LINE_TESTS_ONLY": "1"})
    assert code != 0
    assert "which would leave them out of run 3" in said, said[-2000:]
