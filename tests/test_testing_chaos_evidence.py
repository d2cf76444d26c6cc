"""trainexec/testing/chaos/evidence.py on its own: what a run's evidence tells of a pod
(its last lines) and of the faults as applied (when the last one ended), on evidence
built as a run leaves it (tests/test_testing_chaos.py's good run, changed)."""

import pytest

from test_testing_chaos import T0, good_evidence
from trainexec.testing.chaos.evidence import AppliedFault, LogLine
from trainexec.testing.chaos.schedule import Fault

pytestmark = pytest.mark.any_line


def test_the_tail_of_a_task_is_its_last_lines_timed_from_the_jobs_start():
    lines = tuple(LogLine(T0 + at, task, text) for at, task, text in [
        (3.0, "worker:0", "step 100"), (4.5, "chief:0", "saved ckpt-100"),
        (6.3, "worker:0", "step 200"), (9.0, "worker:0", "step 300")])
    evidence = good_evidence(lines=lines)
    assert evidence.tail("worker:0", 2) == ["6.3s [worker:0] step 200",
                                            "9.0s [worker:0] step 300"]
    assert evidence.tail("chief:0") == ["4.5s [chief:0] saved ckpt-100"]
    assert evidence.tail("ps:0") == []


def test_the_last_fault_end_counts_applied_faults_only():
    # The good run: a SIGTERM at 25 s, a cut from 25 s to 31 s.
    assert good_evidence().last_fault_over == T0 + 31.0
    never = AppliedFault(Fault("cut", "worker", 1, 40.0, 30.0), T0 + 70.0, T0 + 100.0,
                         applied=False, detail="not applied: every pod had ended")
    assert good_evidence(applied=good_evidence().applied + (never,)).last_fault_over == (
        T0 + 31.0)
    assert good_evidence(applied=()).last_fault_over is None
