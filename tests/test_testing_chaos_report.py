"""trainexec/testing/chaos/report.py: a chaos run's report: its table row (which faults
were applied, the wall time against the same shape without faults, the restarts, the
violations), the restarts each fault brought, the baselines kept per shape."""

import pytest

from trainexec.testing.chaos import Evidence, Schedule, check
from trainexec.testing.chaos.invariants import AppliedFault, PodExit
from trainexec.testing.chaos.report import (ChaosReport, baseline_training_secs,
                                            baseline_wall_secs, record_baseline,
                                            restarts_by_fault)
from trainexec.testing.kubelet import Event

pytestmark = pytest.mark.any_line

T0 = 1000.0
SCHEDULE = Schedule.explicit("mwms", ["sigterm worker:0 at 5s", "cut chief:0 at 5s for 6s"],
                             seed=42)


def _evidence(applied) -> Evidence:
    return Evidence(schedule=SCHEDULE, max_steps=1200, phase="Succeeded", reason="",
                    started=T0, ended=T0 + 60.0,
                    exits=(PodExit("demo-chief-0", T0 + 60.0, 0),), restarts={},
                    still_running=(), chief="demo-chief-0", applied=applied)


def test_the_row_says_which_faults_were_not_applied_and_the_wall_against_the_baseline():
    applied = AppliedFault(SCHEDULE.faults[0], T0 + 25.0, T0 + 25.0)
    late = AppliedFault(SCHEDULE.faults[1], T0 + 90.0, T0 + 90.0, applied=False,
                        detail="not applied: every pod had ended before its time")
    evidence = _evidence((applied, late))
    report = ChaosReport(SCHEDULE, evidence, tuple(check(evidence)), 60.0, 70.0,
                         {"demo-worker-0": 1}, (("sigterm worker:0 at 5s", 1),),
                         baseline_wall_secs=40.0)
    assert report.faults_applied == 1
    row = report.row()
    assert row["faults"] == ("1/2 applied: sigterm worker:0 at 5s; "
                             "cut chief:0 at 5s for 6s")
    assert row["wall"] == "60s (1.5x)" and row["restarts"] == "1"
    assert row["outcome"] == "Succeeded"
    assert row["violations"] == ", ".join(v.name for v in report.violations) or "-"


def test_each_fault_counts_the_restarts_until_the_next_one():
    first = AppliedFault(SCHEDULE.faults[0], T0 + 10.0, T0 + 10.0)
    second = AppliedFault(SCHEDULE.faults[1], T0 + 20.0, T0 + 26.0)
    events = [Event(T0 + 11.0, "demo-worker-0", "restarting"),
              Event(T0 + 21.0, "demo-chief-0", "restarting"),
              Event(T0 + 22.0, "demo-worker-1", "restarting"),
              Event(T0 + 23.0, "demo-worker-1", "started")]
    assert restarts_by_fault((first, second), events, T0 + 60.0) == (
        ("sigterm worker:0 at 5s", 1), ("cut chief:0 at 5s for 6s", 2))


def _clean_run(schedule, wall, training_began=None, final_step_at=None):
    evidence = Evidence(schedule=schedule, max_steps=1200, phase="Succeeded", reason="",
                        started=T0, ended=T0 + wall, exits=(), restarts={},
                        still_running=(), chief="demo-chief-0",
                        training_began=training_began, final_step_at=final_step_at)
    return ChaosReport(schedule, evidence, (), wall, wall + 5.0, {}, ())


def test_a_baseline_is_kept_per_shape_and_job_once():
    shape = Schedule.explicit("pss", [], storage="gs", workers=1)
    assert baseline_wall_secs(shape) is None
    record_baseline(_clean_run(shape, 30.0, training_began=T0 + 8.0, final_step_at=T0 + 20.0))
    record_baseline(_clean_run(shape, 50.0))
    assert baseline_wall_secs(shape) == 30.0
    assert baseline_training_secs(shape) == 12.0  # the first checkpoint to the last
    assert baseline_wall_secs(Schedule.explicit("pss", [], storage="gs", workers=2)) is None

    def own_job(schedule, paths):
        raise AssertionError("not run")
    assert baseline_wall_secs(shape, own_job) is None  # another job, another baseline
