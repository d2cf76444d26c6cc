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

from trainexec.testing.chaos.invariants import (CHECKS, AppliedFault, Evidence, Violation,
                                                not_judged)
from trainexec.testing.chaos.schedule import Schedule

__all__ = ["ChaosReport", "baseline_training_secs", "baseline_wall_secs", "record_baseline",
           "restarts_by_fault"]


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
    def training_secs(self) -> float | None:
        """How long the job trained after its first checkpoint, until one at
        `max_steps` showed (None: it never got there)."""
        began, final = self.evidence.training_began, self.evidence.final_step_at
        return None if began is None or final is None else final - began

    @property
    def not_judged(self) -> dict[str, str]:
        """The invariants that did not apply to this run, each with why."""
        return not_judged(self.evidence)

    @property
    def judged(self) -> list[str]:
        """The invariants this run was judged on."""
        return [name for name in CHECKS if name not in self.not_judged]

    def summary(self) -> str:
        """What the run found, in a few lines: outcome, faults, violations, and which
        invariants were judged (and why the others were not)."""
        row = self.row()
        trained = ("?" if self.training_secs is None else f"{self.training_secs:.1f}s")
        lines = [self.schedule.describe(),
                 f"{self.outcome} in {row['wall']} ({trained} of training after the first "
                 f"checkpoint), {row['restarts']} restarts, {self.faults_applied} of "
                 f"{len(self.schedule.faults)} faults applied",
                 f"judged: {', '.join(self.judged)}"]
        lines += [f"not judged: {name}: {why}" for name, why in self.not_judged.items()]
        lines += [f"violated: {v.describe()}" for v in self.violations] or ["violated: none"]
        return "\n".join(lines)

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


# (shape, job factory) -> (wall, training) secs of a run without faults in this process.
_BASELINES: dict[tuple, tuple[float, float | None]] = {}


def baseline_wall_secs(schedule: Schedule, job: object = None) -> float | None:
    """The wall time of a run without faults of the schedule's shape (and `job`), if
    one ran in this process (`run_schedule(..., baseline=True)`)."""
    found = _BASELINES.get((schedule.shape_key(), job))
    return None if found is None else found[0]


def baseline_training_secs(schedule: Schedule, job: object = None) -> float | None:
    """How long that run trained after its first checkpoint (None: not known)."""
    found = _BASELINES.get((schedule.shape_key(), job))
    return None if found is None else found[1]


def record_baseline(report: ChaosReport, job: object = None) -> None:
    """Keeps the wall and training time of a successful run without faults, per shape
    and job."""
    if report.wall_secs is not None:
        _BASELINES.setdefault((report.schedule.shape_key(), job),
                              (report.wall_secs, report.training_secs))


def restarts_by_fault(applied: Sequence[AppliedFault], events, end: float
                       ) -> tuple[tuple[str, int], ...]:
    done = [a for a in applied if a.applied]
    counts = []
    for i, a in enumerate(done):
        until = done[i + 1].at if i + 1 < len(done) else end
        counts.append((a.fault.describe(), sum(
            1 for e in events if e.what == "restarting" and a.at <= e.at < until)))
    return tuple(counts)
