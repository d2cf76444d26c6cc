"""The README's test command (scripts/test.sh) leaves, per test line, a JUnit file, the
run's whole output and its slowest tests, where TRAINEXEC_TEST_REPORTS says."""

import os
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

pytestmark = pytest.mark.any_line

ROOT = pathlib.Path(__file__).resolve().parent.parent
IN_THIS_CHECKOUTS_VENV = pytest.mark.skipif(
    not (pathlib.Path(sys.prefix) / ".trainexec-installed").exists()
    or pathlib.Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="runs scripts/test.sh in this checkout's .venv, which scripts/env.sh made")


@IN_THIS_CHECKOUTS_VENV
def test_each_line_leaves_its_junit_file_log_and_slowest_tests(tmp_path):
    reports = tmp_path / "reports"
    env = {**os.environ, "TRAINEXEC_TEST_LINES": "2", "TRAINEXEC_TEST_REPORTS": str(reports)}
    env.pop("PYTEST_CURRENT_TEST", None)
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test.sh"), "-p", "no:cacheprovider",
         "tests/test_keras_compat.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    suite = ET.parse(reports / "line2.xml").getroot().find("testsuite")
    assert suite.get("name") == "line2"
    ran = int(suite.get("tests"))
    assert ran > 0 and suite.get("failures") == "0" and suite.get("errors") == "0"
    assert f"{ran} passed" in (reports / "line2.log").read_text() or ran == int(
        suite.get("skipped"))
    slowest = (reports / "line2-slowest.txt").read_text()
    assert "slowest 40 durations" in slowest and "tests/test_keras_compat.py::" in slowest
    assert f"JUnit files, logs and slowest tests in {reports}" in done.stdout


@IN_THIS_CHECKOUTS_VENV
def test_a_whole_line_runs_its_unit_tests_on_two_processes_beside_its_cluster_tests(tmp_path):
    # No arguments: the line's own split. PYTEST_ADDOPTS narrows both parts to one file
    # that starts no cluster (the cluster part then selects nothing), a small run.
    reports = tmp_path / "reports"
    env = {**os.environ, "TRAINEXEC_TEST_LINES": "2", "TRAINEXEC_TEST_REPORTS": str(reports),
           "PYTEST_ADDOPTS": "-p no:cacheprovider tests/test_keras_compat.py"}
    env.pop("PYTEST_CURRENT_TEST", None)
    done = subprocess.run(["bash", str(ROOT / "scripts" / "test.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    unit = (reports / "line2-unit.log").read_text()
    assert "created: 2/2 workers" in unit or "2 workers [" in unit, unit[-2000:]
    parts = [ET.parse(reports / f"line2-{part}.xml").getroot().find("testsuite")
             for part in ("unit", "cluster")]
    merged = ET.parse(reports / "line2.xml").getroot().findall("testsuite")
    assert [int(s.get("tests")) for s in merged] == [int(s.get("tests")) for s in parts]
    assert int(parts[0].get("tests")) > 0 and all(s.get("name") == "line2" for s in merged)
    summary = done.stdout[done.stdout.index("===== summary"):]
    idle = shutil.which("chrt") is not None and subprocess.run(
        ["chrt", "--idle", "0", "ionice", "-c", "3", "true"], capture_output=True).returncode == 0
    priority = "idle priority" if idle else "nice 10"
    assert f"no cluster (2 processes, {priority}):" in summary
    assert "tf_keras (Keras 2), cluster and timed:" in summary
    assert (reports / "line2.log").read_text().startswith(unit)
