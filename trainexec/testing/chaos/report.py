"""What a chaos run reports: its schedule, evidence, violations and figures.

`ChaosReport` is what `run_schedule` returns: the `Evidence` the invariants judged,
their `Violation`s (safety first), the job's wall time against a run of the same
shape without faults (`baseline_wall_secs`), the restarts each fault brought, and one
row of the CLI's table (`row()`).

Example:
    ```python
    report = run_schedule(schedule, "/tmp/chaos-7")
    report.row()["violations"], report.safety, report.faults_applied
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from trainexec.testing.chaos.invariants import AppliedFault, Evidence, Violation
from trainexec.testing.chaos.schedule import Schedule

__all__ = ["ChaosReport", "baseline_wall_secs", "record_baseline", "restarts_by_fault"]


@dataclasses.dataclass(frozen=True)
class ChaosReport:
    """One chaos run: its schedule, evidence, violations and figures."""

    schedule: Schedule
    evidence: Evidence
    violations: tuple[Violation, ...]
    wall_secs: float | None  # the job's start to its success or failure
    run_secs: float  # the whole run, bed included
    restarts: Mapping[str, int]  # per pod
    restarts_by_fault: tuple[tuple[str, int], ...]  # fault, restarts until the next
    baseline_wall_secs: float | None = None  # the same shape without faults
    workdir: str = ""

    @property
    def safety(self) -> list[Violation]:
        return [v for v in self.violations if not v.liveness]

    @property
    def liveness(self) -> list[Violation]:
        return [v for v in self.violations if v.liveness]

    @property
    def outcome(self) -> str:
        return self.evidence.phase

    @property
    def faults_applied(self) -> int:
        """How many of the schedule's faults were applied (one due after every pod
        had ended, or aimed at a pod between runs, was not)."""
        return sum(a.applied for a in self.evidence.applied)

    def row(self) -> dict[str, str]:
        """The table's columns: seed, shape, faults, outcome, restarts, wall,
        violations."""
        wall = "?" if self.wall_secs is None else f"{self.wall_secs:.0f}s"
        if self.baseline_wall_secs:
            wall += f" ({self.wall_secs / self.baseline_wall_secs:.1f}x)" \
                if self.wall_secs else ""
        faults = "; ".join(f.describe() for f in self.schedule.faults) or "none"
        if self.schedule.faults:  # first, so that a cut cell still says it
            faults = f"{self.faults_applied}/{len(self.schedule.faults)} applied: {faults}"
        return {"seed": self.schedule.label(),
                "shape": f"{self.schedule.shape()} {self.schedule.storage}",
                "faults": faults, "outcome": self.outcome,
                "restarts": str(sum(self.restarts.values())), "wall": wall,
                "violations": ", ".join(v.name for v in self.violations) or "-"}


_BASELINES: dict[tuple, float] = {}


def baseline_wall_secs(schedule: Schedule) -> float | None:
    """The wall time of a run without faults of the schedule's shape, if one ran in
    this process (`run_schedule(..., baseline=True)`)."""
    return _BASELINES.get(schedule.shape_key())


def record_baseline(schedule: Schedule, wall_secs: float) -> None:
    """Keeps the wall time of a successful run without faults, per shape."""
    _BASELINES.setdefault(schedule.shape_key(), wall_secs)


def restarts_by_fault(applied: Sequence[AppliedFault], events, end: float
                       ) -> tuple[tuple[str, int], ...]:
    done = [a for a in applied if a.applied]
    counts = []
    for i, a in enumerate(done):
        until = done[i + 1].at if i + 1 < len(done) else end
        counts.append((a.fault.describe(), sum(
            1 for e in events if e.what == "restarting" and a.at <= e.at < until)))
    return tuple(counts)
