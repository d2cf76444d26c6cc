"""Every multi-host run of the demo jobs: a chaos `Schedule` on the bed, judged by one
checker (trainexec.testing.chaos: each pod on its own host, Kubeflow's TF_CONFIG, the
ExitCode restart policy, model_dir on a local disk, NFS-like views or gs:// through the
GCS emulator). Each run asserts every invariant: the job succeeds, the final checkpoint
is at max_steps and evaluated, one whole export, no half-written checkpoint evaluated,
a killed or preempted pod restarted, no process left (safety); every pod ending within
the bound after the chief and training going on after the faults (liveness).

* default: `trainexec.testing.chaos.suite.DEFAULT_SET` for this TensorFlow line, every
  kept regression plus what covers every job mode, fault kind, role and storage
  (`python -m trainexec.testing.chaos --coverage` prints it);
* `-m multihost`: the full one-fault matrix of this line as well (`suite.full_matrix`);
* `-m chaos`: seeds $TRAINEXEC_CHAOS_SEEDS (default 1-20) drawn over this line's modes.

Root only (bindfs for nfs, the emulator's packages for gs): skipped, saying why,
elsewhere. $TRAINEXEC_MATRIX_REPORT, if set, gets each run's row as a JSON line.
"""

from __future__ import annotations

import json
import os

import pytest

from trainexec.testing import gcs
from trainexec.testing import storage as storage_views
from trainexec.testing.chaos import Schedule, parse_seeds, run_schedule
from trainexec.testing.chaos.suite import drawn_line_modes, for_line, full_matrix, line_modes
from trainexec.testing.netns import unavailable

WHY_NOT = unavailable()

pytestmark = [pytest.mark.any_line, pytest.mark.cluster, pytest.mark.multihost,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


def _param(name, schedule, *marks):
    estimator = [pytest.mark.estimator] if schedule.mode == "estimator" else []
    return pytest.param(schedule, id=name, marks=[*estimator, *marks])


def pytest_generate_tests(metafunc):
    if "schedule" not in metafunc.fixturenames:
        return
    modes = line_modes()
    wanted = metafunc.config.getoption("markexpr") or ""
    params = [_param(e.name, e.schedule) for e in for_line(modes)]
    # The rest only when -m names them: the default run neither collects nor skips them.
    if "multihost" in wanted:
        params += [_param(e.name, e.schedule, pytest.mark.full_matrix)
                   for e in full_matrix(modes)]
    if "chaos" in wanted:
        for seed in parse_seeds(os.environ.get("TRAINEXEC_CHAOS_SEEDS", "1-20")):
            schedule = Schedule.generate(seed, modes=drawn_line_modes())
            params.append(_param(f"{schedule.mode}-seed-{seed}", schedule,
                                 pytest.mark.chaos))
    metafunc.parametrize("schedule", params)


def _why_not(schedule: Schedule) -> str | None:
    if schedule.storage == "nfs":
        return storage_views.unavailable()
    if schedule.storage == "gs":
        return gcs.unavailable()
    return None


def _report(row: dict) -> None:
    path = os.environ.get("TRAINEXEC_MATRIX_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def test_chaos_schedules_keep_every_promise(tmp_path, schedule):
    why = _why_not(schedule)
    if why:
        pytest.skip(why)
    # 300 s: about four times a run here; a hang then fails the test, not the budget.
    result = run_schedule(schedule, str(tmp_path), timeout_secs=300)
    row = result.row()
    _report({"chaos": schedule.describe(), **row, "run_secs": round(result.run_secs, 1),
             "restarts_by_fault": result.restarts_by_fault,
             "violations": [v.describe() for v in result.violations],
             "log": result.evidence.log_path})
    if schedule.faults:
        assert result.faults_applied, (
            f"{schedule.describe()}: no fault was applied (every pod had ended before the "
            f"first fault's time), so this run tested nothing: pick another seed")
    told = "\n".join(f"{v.describe()}\n    " + "\n    ".join(v.evidence)
                     for v in result.violations)
    assert not result.safety, (f"{schedule.describe()}\nsafety violated:\n{told}\n"
                               f"log: {result.evidence.log_path}")
    assert not result.liveness, (f"{schedule.describe()}\nliveness bound missed:\n{told}\n"
                                 f"log: {result.evidence.log_path}")
