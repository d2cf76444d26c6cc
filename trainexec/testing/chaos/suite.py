"""The chaos schedules CI runs: a default set chosen by coverage, and the full matrix.

Every multi-host run of the demo jobs is a `Schedule` judged by
`trainexec.testing.chaos.invariants.check`: one checker, one bound per storage.

* `DEFAULT_SET`: every kept regression (`REGRESSIONS`: each schedule that ever
  failed), and one-fault schedules added only where the regressions leave a job
  mode, a fault kind, a role or a storage uncovered. Each TensorFlow line runs the
  entries whose job runs there (`for_line`); `coverage()` says which entry covers
  what, and `python -m trainexec.testing.chaos --coverage` prints it.
* `full_matrix(modes)`: one fault at a time, for `-m multihost`: on local disk every
  fault kind of every role of every mode, and a run without faults; on the NFS-like
  and gs:// storages a run without faults, a SIGKILL of each role and each of the
  storage's own faults.

Example:
    ```python
    for entry in for_line(line_modes()):
        report = run_schedule(entry.schedule, f"/tmp/chaos/{entry.name}")
    print(format_coverage(for_line(line_modes()), line_modes()))
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

from trainexec.testing.chaos.regressions import REGRESSIONS
from trainexec.testing.chaos.runner import mode_unavailable
from trainexec.testing.chaos.schedule import (ALL_KINDS, DRAWN_MODES, KINDS, MODES,
                                              STORAGE_FAULTS, STORAGES, TASK_TYPES,
                                              Schedule)

__all__ = ["DEFAULT_SET", "SuiteEntry", "coverage", "drawn_line_modes", "for_line",
           "format_coverage", "full_matrix", "line_modes"]

# How long a one-fault schedule's freeze or cut lasts, and when it starts: two seconds
# after training began, when the first checkpoints are down and training goes on.
MATRIX_FAULT_SECS = 15.0
MATRIX_FAULT_AT_SECS = 2.0


@dataclasses.dataclass(frozen=True)
class SuiteEntry:
    """One schedule of the suite, its name (a test id) and why it is there."""

    name: str
    schedule: Schedule
    why: str


# A one-fault schedule's storage errors and slowness, per storage.
_DETAIL = {("gs", "storage-errors"): " with 503", ("nfs", "storage-errors"): " with EIO",
           ("gs", "storage-slow"): " with 1s", ("nfs", "storage-slow"): " with 0.05s"}


def _one_fault(mode: str, storage: str, kind: str | None, task: str | None) -> Schedule:
    faults = []
    if kind is not None and task is not None:
        fault = f"{kind} {task} at {MATRIX_FAULT_AT_SECS:g}s"
        if kind not in ("kill", "sigterm"):
            fault += f" for {MATRIX_FAULT_SECS:g}s"
        faults.append(fault + _DETAIL.get((storage, kind), ""))
    label = f"{mode} on {storage}, " + (f"{kind} {task}" if faults else "no fault")
    return Schedule.explicit(mode, faults, storage=storage, name=label)


def _storage_faults(mode: str, storage: str, faults: Sequence[str],
                    name: str) -> Schedule:
    """A job that meets its storage's faults (2400 steps: they last a while)."""
    return Schedule.explicit(mode, faults, storage=storage, name=name, max_steps=2400)


DEFAULT_SET: tuple[SuiteEntry, ...] = (
    *(SuiteEntry(f"regression-{name}", schedule, "a kept regression: it once failed")
      for name, schedule in REGRESSIONS.items()),
    SuiteEntry("pss-gs-storage", _storage_faults(
        "pss", "gs", ["storage-errors storage:0 at 2s for 10s with 503", "kill ps:0 at 4s",
                      "storage-slow storage:0 at 13s for 5s with 1s"],
        "pss on gs, 503s and slow answers, ps killed"),
        "the ParameterServer job and gs:// storage, its errors and slowness"),
    SuiteEntry("mwms-nfs-storage", _storage_faults(
        "mwms", "nfs", ["storage-outage storage:0 at 2s for 8s",
                        "storage-errors storage:0 at 12s for 3s with EIO",
                        "disk-full storage:0 at 16s for 8s"],
        "mwms on nfs, a stall, EIO, a full disk"),
        "NFS-like storage stalled, failing, then full (the job resubmitted)"),
    SuiteEntry("canned-ps-killed", Schedule.explicit(
        "canned", ["kill ps:0 at 3s", "sigterm worker:1 at 6s"],
        name="canned wide-and-deep, its ps killed, a worker preempted"),
        "a canned estimator (trainexec.estimator's DNNLinearCombinedClassifier) as a job"),
    SuiteEntry("estimator-mwms-worker-killed", Schedule.explicit(
        "estimator-mwms", ["kill worker:1 at 3s"],
        name="Estimator under MultiWorkerMirroredStrategy, a worker killed"),
        "trainexec.estimator's MWMS group restarting together"),
    # 2400 steps: at 1200, tf.estimator's job once ended before the cut at 6.7 s (CI).
    SuiteEntry("estimator-seed-117", dataclasses.replace(
        Schedule.generate(117, modes=("estimator",)), max_steps=2400),
               "tf.estimator's chief cut off (a restarted ps once ended 30 s late)"),
    SuiteEntry("estimator-gs-storage", _storage_faults(
        "estimator", "gs", ["kill worker:1 at 2s", "storage-outage storage:0 at 4s for 10s",
                            "storage-slow storage:0 at 16s for 4s with 1s"],
        "estimator on gs, a worker killed, an outage, slow answers"),
        "tf.estimator on gs://, through an outage"),
    SuiteEntry("estimator-nfs-storage", _storage_faults(
        "estimator", "nfs", ["sigterm evaluator:0 at 2s",
                             "storage-errors storage:0 at 4s for 3s with ESTALE",
                             "disk-full storage:0 at 10s for 8s"],
        "estimator on nfs, ESTALE, a full disk"),
        "tf.estimator on NFS-like storage: stale handles, a full disk"),
)


def line_modes() -> tuple[str, ...]:
    """The job modes whose packaged job runs on this TensorFlow line."""
    return tuple(m for m in MODES if mode_unavailable(m) is None)


def drawn_line_modes() -> tuple[str, ...]:
    """The modes seeds are drawn over (`schedule.DRAWN_MODES`) whose job runs on this
    TensorFlow line."""
    return tuple(m for m in DRAWN_MODES if mode_unavailable(m) is None)


def for_line(modes: Sequence[str], entries: Iterable[SuiteEntry] = DEFAULT_SET
             ) -> list[SuiteEntry]:
    """The entries whose job mode is among `modes` (those of one TensorFlow line)."""
    return [e for e in entries if e.schedule.mode in modes]


def full_matrix(modes: Sequence[str]) -> list[SuiteEntry]:
    """One fault at a time (see the module doc), for the jobs of `modes`."""
    entries = []
    for mode in modes:
        tasks = [f"{t}:{i}" for t, i in Schedule.explicit(mode, []).tasks()
                 if (t, i) != ("worker", 0)]  # worker:1 stands for the workers
        for storage in STORAGES:
            entries.append(SuiteEntry(f"{mode}-{storage}-no-fault",
                                      _one_fault(mode, storage, None, None),
                                      "the full matrix: no fault"))
            kinds = KINDS if storage == "local" else ("kill",)
            for kind in kinds:
                for task in tasks:
                    entries.append(SuiteEntry(
                        f"{mode}-{storage}-{kind}-{task.replace(':', '')}",
                        _one_fault(mode, storage, kind, task),
                        "the full matrix: one fault at a time"))
            for kind in STORAGE_FAULTS[storage]:
                entries.append(SuiteEntry(
                    f"{mode}-{storage}-{kind}", _one_fault(mode, storage, kind, "storage:0"),
                    "the full matrix: one storage fault"))
    return entries


def coverage(entries: Iterable[SuiteEntry]) -> dict[str, dict[str, list[str]]]:
    """{dimension: {value: names of the entries that cover it}} for the dimensions
    mode, fault kind, role and storage (a fault covers its kind and its role; a
    storage fault, role `storage`, covers no role of the job)."""
    found: dict[str, dict[str, list[str]]] = {
        "mode": {}, "fault kind": {}, "role": {}, "storage": {}}
    for entry in entries:
        s = entry.schedule
        found["mode"].setdefault(s.mode, []).append(entry.name)
        found["storage"].setdefault(s.storage, []).append(entry.name)
        for fault in s.faults:
            for dimension, value in (("fault kind", fault.kind), ("role", fault.task_type)):
                if dimension == "role" and fault.on_storage:
                    continue
                names = found[dimension].setdefault(value, [])
                if entry.name not in names:
                    names.append(entry.name)
    return found


def format_coverage(entries: Sequence[SuiteEntry], modes: Sequence[str]) -> str:
    """The default set of a line as text: each entry, then each dimension's values
    with the entries covering them (MISSING where none does)."""
    lines = [f"{len(entries)} schedules:"]
    lines += [f"  {e.name}: {e.schedule.describe()} ({e.why})" for e in entries]
    wanted = {"mode": modes, "fault kind": ALL_KINDS, "role": TASK_TYPES,
              "storage": STORAGES}
    found = coverage(entries)
    for dimension, values in wanted.items():
        lines.append(f"{dimension}:")
        for value in values:
            names = found[dimension].get(value)
            lines.append(f"  {value}: {', '.join(names) if names else 'MISSING'}")
    return "\n".join(lines)


def missing(entries: Sequence[SuiteEntry], modes: Sequence[str]) -> list[str]:
    """`dimension value` for each mode, kind, role and storage no entry covers."""
    wanted = {"mode": modes, "fault kind": ALL_KINDS, "role": TASK_TYPES,
              "storage": STORAGES}
    found = coverage(entries)
    return [f"{d} {v}" for d, values in wanted.items() for v in values
            if not found[d].get(v)]
