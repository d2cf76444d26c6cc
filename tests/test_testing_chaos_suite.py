"""The chaos suite CI runs: the default set of each TensorFlow line covers every job
mode, fault kind, role and storage and holds every kept regression; the full matrix is
one fault at a time; the coverage the command prints (no bed needed)."""

import io

import pytest

from trainexec.testing.chaos import REGRESSIONS, cli
from trainexec.testing.chaos.schedule import (ALL_KINDS, KINDS, STORAGE_FAULTS, STORAGES,
                                              TASK_TYPES)
from trainexec.testing.chaos.suite import (DEFAULT_SET, coverage, for_line, format_coverage,
                                           full_matrix, missing)

pytestmark = pytest.mark.any_line

LINES = {"current TensorFlow": ("mwms", "pss", "native-estimator", "canned",
                                 "estimator-mwms"),
         "TensorFlow 2.15": ("estimator",)}


@pytest.mark.parametrize("modes", LINES.values(), ids=LINES.keys())
def test_each_lines_default_set_covers_every_mode_kind_role_and_storage(modes):
    entries = for_line(modes)
    assert missing(entries, modes) == []
    found = coverage(entries)
    assert set(found["fault kind"]) == set(ALL_KINDS) and set(found["role"]) == set(TASK_TYPES)
    assert set(found["storage"]) == set(STORAGES)


def test_every_kept_regression_is_in_the_default_set():
    kept = {e.schedule for e in DEFAULT_SET}
    assert set(REGRESSIONS.values()) <= kept
    assert len({e.name for e in DEFAULT_SET}) == len(DEFAULT_SET)  # test ids stay unique


def test_a_gap_in_coverage_is_named():
    without_gs = [e for e in for_line(LINES["current TensorFlow"])
                  if e.schedule.storage != "gs"]
    assert "storage gs" in missing(without_gs, LINES["current TensorFlow"])
    assert "  gs: MISSING" in format_coverage(without_gs, LINES["current TensorFlow"])


def test_the_full_matrix_is_one_fault_at_a_time_over_every_kind_role_and_storage():
    entries = full_matrix(("pss",))
    assert all(len(e.schedule.faults) <= 1 for e in entries)
    assert len({e.name for e in entries}) == len(entries)
    local = [e.schedule for e in entries if e.schedule.storage == "local"]
    # Every kind of every role (worker:1 for the workers), and a run without faults.
    assert {(f.kind, f.task) for s in local for f in s.faults} == {
        (kind, task) for kind in KINDS for task in ("chief:0", "worker:1", "ps:0",
                                                    "evaluator:0")}
    assert sum(not s.faults for s in local) == 1
    for storage in ("nfs", "gs"):
        kinds = {f.kind for e in entries if e.schedule.storage == storage
                 for f in e.schedule.faults}
        assert kinds == {"kill", *STORAGE_FAULTS[storage]}


def test_the_command_prints_what_the_default_set_covers(monkeypatch):
    monkeypatch.setattr("trainexec.testing.chaos.suite.line_modes",
                        lambda: LINES["current TensorFlow"])
    out = io.StringIO()
    assert cli.main(["--coverage"], out=out) == 0
    text = out.getvalue()
    assert "modes: mwms, pss, native-estimator, canned, estimator-mwms" in text
    assert "pss-gs-storage" in text and "MISSING" not in text
    for value in (*ALL_KINDS, *TASK_TYPES, *STORAGES):
        assert f"  {value}: " in text
