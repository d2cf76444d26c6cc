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
  and gs:// storages a run without faults and a SIGKILL of each role.

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
from trainexec.testing.chaos.schedule import KINDS, MODES, STORAGES, TASK_TYPES, Schedule

__all__ = ["DEFAULT_SET", "SuiteEntry", "coverage", "for_line", "format_coverage",
           "full_matrix", "line_modes"]

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


def _one_fault(mode: str, storage: str, kind: str | None, task: str | None) -> Schedule:
    faults = []
    if kind is not None and task is not None:
        fault = f"{kind} {task} at {MATRIX_FAULT_AT_SECS:g}s"
        if kind in ("freeze", "cut"):
            fault += f" for {MATRIX_FAULT_SECS:g}s"
        faults.append(fault)
    label = f"{mode} on {storage}, " + (f"{kind} {task}" if faults else "no fault")
    return Schedule.explicit(mode, faults, storage=storage, name=label)


DEFAULT_SET: tuple[SuiteEntry, ...] = (
    *(SuiteEntry(f"regression-{name}", schedule, "a kept regression: it once failed")
      for name, schedule in REGRESSIONS.items()),
    SuiteEntry("pss-gs-kill-ps", _one_fault("pss", "gs", "kill", "ps:0"),
               "the ParameterServer job and gs:// storage (no regression runs them)"),
    SuiteEntry("estimator-seed-117", Schedule.generate(117, modes=("estimator",)),
               "tf.estimator's chief cut off (a restarted ps once ended 30 s late)"),
    SuiteEntry("estimator-seed-112", Schedule.generate(112, modes=("estimator",)),
               "tf.estimator on NFS-like storage: the ps and evaluator preempted"),
    SuiteEntry("estimator-gs-kill-worker", _one_fault("estimator", "gs", "kill", "worker:1"),
               "tf.estimator on gs://"),
)


def line_modes() -> tuple[str, ...]:
    """The job modes whose packaged job runs on this TensorFlow line."""
    return tuple(m for m in MODES if mode_unavailable(m) is None)


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
    return entries


def coverage(entries: Iterable[SuiteEntry]) -> dict[str, dict[str, list[str]]]:
    """{dimension: {value: names of the entries that cover it}} for the dimensions
    mode, fault kind, role and storage (a fault covers its kind and its role)."""
    found: dict[str, dict[str, list[str]]] = {
        "mode": {}, "fault kind": {}, "role": {}, "storage": {}}
    for entry in entries:
        s = entry.schedule
        found["mode"].setdefault(s.mode, []).append(entry.name)
        found["storage"].setdefault(s.storage, []).append(entry.name)
        for fault in s.faults:
            for dimension, value in (("fault kind", fault.kind), ("role", fault.task_type)):
                names = found[dimension].setdefault(value, [])
                if entry.name not in names:
                    names.append(entry.name)
    return found


def format_coverage(entries: Sequence[SuiteEntry], modes: Sequence[str]) -> str:
    """The default set of a line as text: each entry, then each dimension's values
    with the entries covering them (MISSING where none does)."""
    lines = [f"{len(entries)} schedules:"]
    lines += [f"  {e.name}: {e.schedule.describe()} ({e.why})" for e in entries]
    wanted = {"mode": modes, "fault kind": KINDS, "role": TASK_TYPES, "storage": STORAGES}
    found = coverage(entries)
    for dimension, values in wanted.items():
        lines.append(f"{dimension}:")
        for value in values:
            names = found[dimension].get(value)
            lines.append(f"  {value}: {', '.join(names) if names else 'MISSING'}")
    return "\n".join(lines)


def missing(entries: Sequence[SuiteEntry], modes: Sequence[str]) -> list[str]:
    """`dimension value` for each mode, kind, role and storage no entry covers."""
    wanted = {"mode": modes, "fault kind": KINDS, "role": TASK_TYPES, "storage": STORAGES}
    found = coverage(entries)
    return [f"{d} {v}" for d, values in wanted.items() for v in values
            if not found[d].get(v)]
