"""What a chaos run leaves to judge it by: `Evidence` (the job's outcome, the pods'
exits, starts and restarts, the faults as applied, the checkpoints seen and when, what
the evaluator evaluated and exported, the pods' lines) and its parts, with the two
bounds a run is held to (`BOUND_SECS`, `RECOVERY_SECS`).
`trainexec.testing.chaos.runner` gathers it; `trainexec.testing.chaos.invariants`
judges it (and re-exports these names).

Example:
    ```python
    evidence = Evidence(schedule=schedule, max_steps=1200, phase="Succeeded", reason="",
                        started=t0, ended=t0 + 60, exits=(), restarts={},
                        still_running=(), chief="demo-chief-0")
    evidence.tail("worker:0", 4)  # its last four lines, timed from the job's start
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from trainexec.testing.chaos.schedule import Fault, Schedule

__all__ = ["BOUND_SECS", "RECOVERY_SECS", "AppliedFault", "Evaluated", "Evidence",
           "ExportDir", "LogLine", "PodEvent", "PodExit"]

# docs/concepts/faults.md ("Random mixes of faults"): every pod ends within 20 s of the
# later of the chief's success and the last fault's end. A peer still in its role 5 s
# after the chief finished leaves (tasks.peer_watchdog), and a task's own shutdown is
# bounded at 5 s more (contract.exit_deadline) -- except where TensorFlow's C++ shutdown
# holds the interpreter's lock waiting for a peer's coordination service that has gone,
# which no thread can interrupt: a watchdog outside kills it 3 s later (137), and its
# restart, which finds training complete, pays for importing TensorFlow before it ends.
BOUND_SECS = 20.0
# Training goes on within this after the last fault ended or the last restarted pod
# started: a restarted MWMS group re-forms and restores, a ps job reconnects.
RECOVERY_SECS = 30.0


@dataclasses.dataclass(frozen=True)
class AppliedFault:
    """A fault as it was applied: when (monotonic), until when, or why not;
    `lingers_secs`: how long after its end a pod may still be inside it (a request
    begun during a gs:// outage: `ChaosStorage.lingers_secs`)."""

    fault: Fault
    at: float
    ends: float
    applied: bool = True
    detail: str = ""
    lingers_secs: float = 0.0

    @property
    def over(self) -> float:
        """When no pod can still be inside the fault: its end, and its settling."""
        return self.ends + self.lingers_secs


@dataclasses.dataclass(frozen=True)
class PodExit:
    pod: str  # the pod's name, e.g. demo-worker-0
    at: float
    code: int


@dataclasses.dataclass(frozen=True)
class PodEvent:
    """A pod's program started, or the pod is restarting, at a monotonic time."""

    pod: str  # the pod's name, e.g. demo-worker-0
    at: float
    what: str  # "started" or "restarting"


@dataclasses.dataclass(frozen=True)
class LogLine:
    """One line a pod printed, at a monotonic time (to the log's 0.1 s)."""

    at: float
    task: str  # "worker:0"
    text: str


@dataclasses.dataclass(frozen=True)
class Evaluated:
    """A checkpoint the evaluator said it evaluated."""

    path: str  # as the pods saw it
    step: int
    line: LogLine


@dataclasses.dataclass(frozen=True)
class ExportDir:
    path: str  # on this machine
    whole: bool
    missing: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What a chaos run left to judge it by (times are `time.monotonic()`)."""

    schedule: Schedule
    max_steps: int
    phase: str  # the kubelet's: Succeeded / Failed
    reason: str
    started: float
    ended: float | None  # when the job succeeded or failed
    exits: tuple[PodExit, ...]
    restarts: Mapping[str, int]
    still_running: tuple[str, ...]
    chief: str  # the pod whose success is the job's
    applied: tuple[AppliedFault, ...] = ()
    training_began: float | None = None
    newest_checkpoint: str | None = None  # a basename, e.g. ckpt-1200
    newest_step: int = 0
    final_step_at: float | None = None  # when a checkpoint at max_steps first showed
    evaluated: tuple[Evaluated, ...] = ()
    complete_at: Mapping[str, float] = dataclasses.field(default_factory=dict)
    exports: tuple[ExportDir, ...] = ()
    result: Mapping | None = None  # the evaluator's final_result.json
    lines: tuple[LogLine, ...] = ()
    log_path: str = ""
    bound_secs: float = BOUND_SECS
    resubmitted: bool = False  # a full disk stopped the job, which was submitted again
    pod_events: tuple[PodEvent, ...] = ()  # starts and restarts, in time order
    recovery_secs: float = RECOVERY_SECS
    # The exporter whose exports (export/<name>/) the job writes; None: it has none.
    export_name: str | None = "final"

    def tail(self, pod_task: str, count: int = 8) -> list[str]:
        """The last lines `pod_task` ("worker:0") printed, timed from the job's start."""
        mine = [line for line in self.lines if line.task == pod_task]
        return [f"{line.at - self.started:.1f}s [{line.task}] {line.text}"
                for line in mine[-count:]]

    def _last_over(self) -> AppliedFault | None:
        """The applied fault that was over last (`AppliedFault.over`), if any."""
        return max((a for a in self.applied if a.applied), key=lambda a: a.over,
                   default=None)

    @property
    def last_fault_over(self) -> float | None:
        """When the last applied fault was over (`AppliedFault.over`)."""
        last = self._last_over()
        return None if last is None else last.over

    @property
    def fault_end_words(self) -> str:
        """What `last_fault_over` is, for a violation's line."""
        last = self._last_over()
        if last is None or not last.lingers_secs:
            return "the last fault ended"
        return (f"the last fault ended and {last.lingers_secs:g}s more for a request begun "
                f"in it to give up")
