"""The type gate: `.ci/run` type-checks the package (scripts/typecheck.sh, mypy with the
repository's mypy.ini) before the suite, and the run fails on any mypy error."""

import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.any_line

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ci_runs_the_type_check_before_the_suite_and_stops_on_failure():
    lines = [line.split("#")[0].strip() for line in
             (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "set -euo pipefail" in lines  # a failing step ends the run
    assert lines.index("./scripts/typecheck.sh") < lines.index("exec ./scripts/test.sh")


def _environment_ready() -> str | None:
    stamp = pathlib.Path(sys.prefix) / ".trainexec-installed"
    if not stamp.exists() or stamp.stat().st_mtime < (ROOT / "setup.py").stat().st_mtime:
        return (f"{sys.prefix} is not an environment scripts/env.sh made and stamped "
                "(scripts/typecheck.sh would install into it)")
    return None


@pytest.mark.skipif(_environment_ready() is not None, reason=_environment_ready() or "")
def test_the_script_fails_on_a_type_error_and_passes_clean_code(tmp_path):
    env = dict(os.environ, TRAINEXEC_VENV=sys.prefix)
    bad = tmp_path / "bad.py"
    bad.write_text("def half(x: int) -> int:\n    return x / 2\n")
    good = tmp_path / "good.py"
    good.write_text("def half(x: int) -> float:\n    return x / 2\n")
    script = str(ROOT / "scripts" / "typecheck.sh")
    failed = subprocess.run([script, str(bad)], env=env, capture_output=True, text=True,
                            timeout=300)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Incompatible return value type" in failed.stdout
    assert "exit 1" in failed.stdout
    passed = subprocess.run([script, str(good)], env=env, capture_output=True, text=True,
                            timeout=300)
    assert passed.returncode == 0, passed.stdout + passed.stderr
