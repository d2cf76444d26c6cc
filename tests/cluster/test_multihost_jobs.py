"""The demo jobs as TFJobs on separate hosts (trainexec.testing: a network namespace per
pod, TFJob's exact TF_CONFIG on port 2222, its restartPolicy ExitCode), with faults.

Every row asserts what a user of a TFJob sees: the job Succeeded, the evaluator wrote its
final metrics at max_steps, the faulty pod was restarted when the fault ends it, and no pod
was still running 10 s after the chief succeeded (TFJob's default cleanPodPolicy None would
leave it holding its node), and training went on (a newer checkpoint) within 30 s of the
last pod start or the fault's end. The default run covers one fault per job; `-m multihost` (see
tests/conftest.py) runs the whole matrix. Root only: skipped, saying why, elsewhere.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from multihost_jobs import (FAULT_SECS, FAULTS, MAX_STEPS, Progress, demo_job, late_pods,
                            mode_skip, newest_step, report)
from trainexec.testing.kubelet import SUCCEEDED, TFJobRun
from trainexec.testing.netns import TestBed, unavailable

WHY_NOT = unavailable()
SETTLE_SECS = 10.0  # every pod ends by itself within this after the chief succeeded
RECOVERY_SECS = 30.0  # training again within this of the last restarted pod starting

pytestmark = [pytest.mark.cluster, pytest.mark.multihost,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


def _recovery_start(events, fault_at: float) -> float:
    """When the job could train again: the last pod start after the fault, or the
    fault's end (a thaw, a link up) when that is later."""
    after = [e.at for e in events if e.at >= fault_at
             and (e.what == "started" or (e.what == "fault" and e.detail in
                                          ("thawed", "link up")))]
    return max(after, default=fault_at)


_full = pytest.mark.full_matrix
ROWS = [
    pytest.param("mwms", None, id="mwms-no-fault", marks=pytest.mark.keras),
    pytest.param("mwms", ("kill", "worker", 1), id="mwms-kill-worker",
                 marks=pytest.mark.keras),
    pytest.param("pss", ("kill", "ps", 0), id="pss-kill-ps", marks=pytest.mark.keras),
    pytest.param("estimator", ("kill", "worker", 1), id="estimator-kill-worker",
                 marks=pytest.mark.estimator),
    # trainexec.estimator's own engine on the current line (no marker: mode_skip says
    # where it runs).
    pytest.param("native-estimator", ("kill", "ps", 0), id="native-estimator-kill-ps"),
    pytest.param("native-estimator", ("kill", "worker", 1), id="native-estimator-kill-worker",
                 marks=_full),
    pytest.param("native-estimator", None, id="native-estimator-no-fault", marks=_full),
]
_MARKERS = {"estimator": [pytest.mark.estimator], "native-estimator": [],
            "mwms": [pytest.mark.keras], "pss": [pytest.mark.keras]}
_ESTIMATOR_TASKS = (("chief", 0), ("worker", 1), ("ps", 0), ("evaluator", 0))
for _mode, _tasks in (("mwms", (("chief", 0), ("worker", 1), ("evaluator", 0))),
                      ("pss", (("chief", 0), ("worker", 1), ("ps", 0), ("evaluator", 0))),
                      ("estimator", _ESTIMATOR_TASKS), ("native-estimator", _ESTIMATOR_TASKS)):
    for _fault in FAULTS:
        for _task, _index in _tasks:
            _id = f"{_mode}-{_fault}-{_task}"
            if any(row.id == _id for row in ROWS):
                continue
            ROWS.append(pytest.param(_mode, (_fault, _task, _index), id=_id,
                                     marks=[*_MARKERS[_mode], _full]))


@pytest.mark.parametrize("mode, fault", ROWS)
def test_a_tfjob_on_separate_hosts_survives_the_fault(tmp_path, mode, fault):
    if mode_skip(mode):
        pytest.skip(mode_skip(mode))
    model_dir = str(tmp_path / "model")
    os.makedirs(model_dir)
    job = demo_job(mode, model_dir)
    log = open(tmp_path / "pods.log", "w")
    fault_at = fault_ends = None
    with TestBed(job.hosts(), domain=job.domain) as bed, \
            TFJobRun(job, bed, output=log) as run, Progress(model_dir) as progress:
        if fault is not None:
            kind, task, index = fault
            run.wait_for(lambda: newest_step(model_dir) >= 200, 240, "a checkpoint")
            fault_at = time.monotonic()
            FAULTS[kind](run, task, index)
            if kind in ("freeze", "partition"):
                fault_ends = fault_at + FAULT_SECS
        outcome = run.wait(timeout=600, settle_secs=SETTLE_SECS + (
            0.0 if fault_ends is None else max(0.0, fault_ends - time.monotonic())))
        left = run.still_running()
    log.close()
    tail = "".join(open(tmp_path / "pods.log").readlines()[-40:])
    recovered_at = recovery = None
    if fault_at is not None:
        recovered_at = _recovery_start(outcome.events, fault_at)
        recovery = (progress.training_again(recovered_at)
                    if progress.step_at(recovered_at) < MAX_STEPS else 0.0)
    report({"mode": mode, "fault": fault and "-".join(map(str, fault)),
             "phase": outcome.phase, "wall_secs": outcome.wall_secs,
             "recovery_secs": recovery,
             "restarts": sum(e.what == "restarting" for e in outcome.events),
             "exits": [(e.pod, e.code, round(e.at - outcome.started, 1))
                       for e in outcome.events if e.what == "exited"],
             "succeeded_at": outcome.ended and round(outcome.ended - outcome.started, 1)})
    assert outcome.phase == SUCCEEDED, f"{outcome.reason}\n{tail}"
    late = left + late_pods(outcome, fault_ends, SETTLE_SECS)
    assert late == [], (f"still running {SETTLE_SECS:g}s after the chief succeeded (or the "
                        f"fault ended): {late}\n{tail}")
    with open(os.path.join(model_dir, "final_result.json")) as f:
        result = json.load(f)
    assert result["metrics"]["global_step"] >= MAX_STEPS, result
    exits = [e for e in outcome.events if e.what == "exited"]
    assert all(e.code == 0 or e.code >= 128 for e in exits), exits  # never permanent
    if fault is not None and fault[0] in ("kill", "term"):
        restarted = [e for e in outcome.events
                     if e.what == "restarting" and e.pod == f"demo-{fault[1]}-{fault[2]}"]
        assert restarted, f"{fault[1]}:{fault[2]} was not restarted: {exits}"
    if fault is not None:
        assert recovery is not None and recovery <= RECOVERY_SECS, (
            f"training again {recovery}s after the last restart or the fault's end "
            f"(step {progress.step_at(recovered_at)} then): {progress.steps}")
