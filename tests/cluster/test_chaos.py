"""Seeded mixes of faults on the multi-host bed (trainexec.testing.chaos; issue 36): each
schedule runs the demo job as a TFJob, applies its 2-4 overlapping faults (kill, SIGTERM,
freeze, cut of any role) once training has begun, and checks every invariant afterwards:
the job succeeds, final step, the final checkpoint evaluated, one whole export, no half
checkpoint evaluated, no process left (safety), and every pod ending within the bound
(liveness).

The default run keeps a few fixed schedules per TensorFlow line (at most four runs of
about a minute each), chosen to cover every fault kind, overlaps, the ps, the evaluator,
both storages, and kept regressions of schedules that once failed. `-m chaos` runs
the rest of the regressions and seeds $TRAINEXEC_CHAOS_SEEDS (default 1-20) drawn over
the modes of this line and both storages. Root only (bindfs for nfs): skipped, saying
why, elsewhere.
"""

from __future__ import annotations

import os

import pytest

from multihost_jobs import mode_skip, report
from trainexec.testing import storage as storage_views
from trainexec.testing.chaos import MODES, REGRESSIONS, Schedule, parse_seeds, run_schedule
from trainexec.testing.netns import unavailable

WHY_NOT = unavailable()

pytestmark = [pytest.mark.cluster, pytest.mark.multihost,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]

_ESTIMATOR = pytest.mark.estimator

# The default set, at most four runs of about a minute per line. Current TensorFlow: the
# issue's seeds 3 (SIGTERM during a cut: a permanent exit) and 28 (two preemptions, a
# freeze and a cut: a late chief); trainexec.estimator's seed 101 (the ps frozen twice,
# overlapping, a worker frozen and a worker preempted); the PSS job's seed 112 on NFS-like
# storage (ps and evaluator preempted, the ps cut), drawn as `python -m
# trainexec.testing.chaos` draws it on this line. TF 2.15: tf.estimator's kept seed 48
# (evaluator frozen, ps killed and preempted, a worker preempted: a worker left running),
# and seeds drawn over the estimator job: 117 (chief cut, ps preempted: the restarted ps
# once ended 30 s after the chief, waiting out its drain for workers that had finished)
# and 112 on NFS-like storage (ps and evaluator preempted, the ps cut).
LINE_MODES = ("mwms", "pss", "native-estimator")  # what the CLI draws from on current TF
ESTIMATOR_SEEDS = (117, 112)
DEFAULT = [
    pytest.param(REGRESSIONS["seed-3"], id="regression-seed-3"),
    pytest.param(REGRESSIONS["seed-28"], id="regression-seed-28"),
    pytest.param(Schedule.generate(101, modes=LINE_MODES), id="native-estimator-seed-101"),
    pytest.param(Schedule.generate(112, modes=LINE_MODES), id="pss-seed-112"),
    pytest.param(REGRESSIONS["estimator-48"], id="regression-estimator-48",
                 marks=_ESTIMATOR),
    *[pytest.param(Schedule.generate(seed, modes=("estimator",)), id=f"estimator-seed-{seed}",
                   marks=_ESTIMATOR) for seed in ESTIMATOR_SEEDS],
]
# native-estimator-14's faults start 9.7 s after training began, and the job often ends
# by then on an idle machine (0 of 3 applied, seen): it runs here, not in the default set.
MORE_REGRESSIONS = ("seed-1", "seed-14", "seed-31", "native-estimator-14")


def _more() -> list:
    """What `-m chaos` adds: the other kept regressions, and the seeds drawn over this
    line's modes (a seed's schedule depends on the modes it is drawn over)."""
    line_modes = tuple(m for m in MODES if mode_skip(m) is None)
    params = [pytest.param(REGRESSIONS[name], id=f"regression-{name}",
                           marks=pytest.mark.chaos) for name in MORE_REGRESSIONS]
    for seed in parse_seeds(os.environ.get("TRAINEXEC_CHAOS_SEEDS", "1-20")):
        schedule = Schedule.generate(seed, modes=line_modes)
        params.append(pytest.param(schedule, id=f"{schedule.mode}-seed-{seed}",
                                   marks=pytest.mark.chaos))
    return params


def pytest_generate_tests(metafunc):
    if "schedule" in metafunc.fixturenames:
        # The rest only when -m names chaos: the default run neither collects nor skips
        # them.
        wanted = "chaos" in (metafunc.config.getoption("markexpr") or "")
        metafunc.parametrize("schedule", DEFAULT + (_more() if wanted else []))


def _run(schedule: Schedule, tmp_path) -> None:
    why = mode_skip(schedule.mode)
    if why:
        pytest.skip(why)
    if schedule.storage == "nfs" and storage_views.unavailable():
        pytest.skip(storage_views.unavailable())
    # 300 s: about four times a run here; a hang then fails the test, not the budget.
    result = run_schedule(schedule, str(tmp_path), timeout_secs=300)
    row = result.row()
    report({"chaos": schedule.describe(), **row, "run_secs": round(result.run_secs, 1),
            "restarts_by_fault": result.restarts_by_fault,
            "violations": [v.describe() for v in result.violations],
            "log": result.evidence.log_path})
    assert result.faults_applied, (
        f"{schedule.describe()}: no fault was applied (every pod had ended before the "
        f"first fault's time), so this run tested nothing: pick another seed")
    told = "\n".join(f"{v.describe()}\n    " + "\n    ".join(v.evidence)
                     for v in result.violations)
    assert not result.safety, (f"{schedule.describe()}\nsafety violated:\n{told}\n"
                               f"log: {result.evidence.log_path}")
    assert not result.liveness, (f"{schedule.describe()}\nliveness bound missed:\n{told}\n"
                                 f"log: {result.evidence.log_path}")


def test_chaos_schedules_keep_every_promise(tmp_path, schedule):
    _run(schedule, tmp_path)
