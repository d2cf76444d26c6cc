"""trainexec/contract/exit_codes.py's contract on real processes: one process per row of the README's
table (tests/exit_programs/ends.py ends each way), and a platform's own codes set through
TRAINEXEC_EXIT_CODES. The pieces (classification, overrides) are table-tested in
tests/test_contract_exit_codes.py."""

# Each row starts a real process (TensorFlow import, a Keras model): marked `cluster`
# with the other multi-process tests, and `keras` so the tf_keras run covers it too.

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from processes import ROOT, child_env

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]

PROGRAM = os.path.join(ROOT, "tests", "exit_programs", "ends.py")


def _end(way, tmp_path, **env):
    proc = subprocess.run([sys.executable, PROGRAM, way, str(tmp_path / "model")],
                          env=child_env(**env), capture_output=True, text=True, timeout=240)
    return proc.returncode, proc.stderr


@pytest.mark.keras
@pytest.mark.parametrize("way, code, words", [
    ("done", 0, None),
    ("user_error", 1, "exits 1: the program raised an error a restart would repeat "
     "(permanent)"),
    ("config_error", 2, "exits 2: the configuration is wrong"),
    ("peer_lost", 170, "exits 170: a peer task was lost, frozen or cut off (retryable)"),
    ("server_unavailable", 171, "exits 171: this task's TensorFlow server could not start"),
    ("preempted", 143, "Preempted (SIGTERM): saved"),
])
def test_each_way_a_task_ends_has_its_code(tmp_path, way, code, words):
    returncode, stderr = _end(way, tmp_path)
    assert returncode == code, stderr[-3000:]
    if words:
        assert words in stderr, stderr[-3000:]
    if way not in ("done", "preempted"):
        assert "Traceback" in stderr  # the traceback is printed before the exit


@pytest.mark.full_suite(covered_by=(
    "tests/test_contract_exit_codes.py: an override replaces a code and keeps it "
    "retryable; the other rows here end a real task with each code"))
def test_a_platform_can_set_its_own_codes(tmp_path):
    returncode, stderr = _end("peer_lost", tmp_path, TRAINEXEC_EXIT_CODES="peer_lost=75")
    assert returncode == 75, stderr[-2000:]
    returncode, stderr = _end("preempted", tmp_path, TRAINEXEC_EXIT_CODES="preempted=42")
    assert returncode == 42, stderr[-2000:]


@pytest.mark.full_suite(covered_by=(
    "tests/test_contract_exit_codes.py: a bad override ends the task as a config "
    "error (2); the other rows here end a real task with each code"))
def test_a_bad_exit_code_setting_is_a_config_error(tmp_path):
    returncode, stderr = _end("done", tmp_path, TRAINEXEC_EXIT_CODES="preempted=300")
    assert returncode == 2, stderr[-2000:]  # the contract's default code for a bad setting
    assert "TRAINEXEC_EXIT_CODES entry 'preempted=300'" in stderr, stderr[-2000:]
