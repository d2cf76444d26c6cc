"""What must hold after every chaos run, checked on the run's `Evidence`.

`check(evidence)` returns the `Violation`s, each with the schedule's seed and
the evidence (log lines, files, times). Safety invariants (a broken promise,
whatever the machine's load):

* `outcome`: every fault of the chaos kinds is recoverable under TFJob's
  ExitCode policy (kill, SIGTERM, freeze, cut; the storage's errors, outage and
  slowness), so the job succeeds; no pod ever exits with a permanent code (1-127),
  but for a full disk, which stops the job (or a pod of it) with the storage's
  permanent code (74) until it is resubmitted, and that resubmission succeeds;
* `final-step`: the newest checkpoint is at `max_steps` or past it (an
  asynchronous overshoot is noted, not a violation);
* `final-evaluated`: the evaluator evaluated that final checkpoint;
* `export`: exactly one whole final export (a saved_model.pb and variables/ in
  one export directory);
* `half-checkpoint`: every checkpoint the evaluator evaluated had its .index and
  every data shard in place when it did;
* `restarted`: a pod killed or preempted while the job ran was restarted (a
  preempted one that ended 0, its role done, need not be, nor one the fault took down
  (within `TAKEN_DOWN_SECS`) only once the job was over: a SIGTERM just before the
  chief's exit);
* `processes-left`: no pod's program still runs once the job is over and the
  waiting is done.

An invariant is judged where the job has what it speaks of (`not_judged` says why
not, and the report lists both): without an evaluator, `final-evaluated`,
`half-checkpoint` and `export` are not; without an exporter (`Evidence.export_name`
None: a job of your own that names none), `export` is not; `restarted` needs a pod
killed or preempted, `recovery` a fault applied. An evaluator killed or preempted after
the job had ended, or just before with its restart due after the end, is not restarted
(a finished TFJob restarts no pod), so what it had still to do, `final-evaluated` and
`export`, is not judged then.

Liveness (a bound, which load can stretch; reported apart):

* `late-exit`: every pod ends by itself within the bound after the chief
  succeeded, or after the last fault's end when that is later;
* `chief-late`: the chief ends within the bound after the final checkpoint
  appeared (or the last fault's end);
* `recovery`: training goes on (a checkpoint newer than any before) within
  `RECOVERY_SECS` of the later of the last fault's end and the last pod start
  after the first fault, unless training had reached `max_steps` by then.

A fault's end counts its settling (`AppliedFault.over`): after a gs:// outage, a
request that could not connect while the bucket was silent waits on until TensorFlow's
GCS client gives it up (`GcsStorage.lingers_secs`).

Example:
    ```python
    violations = check(evidence)
    safety = [v for v in violations if not v.liveness]
    ```
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Callable, Mapping, Sequence

from trainexec.contract.exit_codes import STORAGE_FAILED, ExitCodes
from trainexec.testing.chaos.evidence import (BOUND_SECS, RECOVERY_SECS, AppliedFault,
                                              Evaluated, Evidence, ExportDir, LogLine,
                                              PodEvent, PodExit)

__all__ = ["BOUND_SECS", "CHECKS", "LIVENESS", "RECOVERY_SECS", "SAFETY",
           "AppliedFault", "Evaluated", "Evidence", "ExportDir", "LogLine", "PodEvent",
           "PodExit", "Violation", "check", "not_judged", "permanent"]

# The code a task exits with when its storage will not recover by itself (the
# contract's default for storage_failed; the bed sets no TRAINEXEC_EXIT_CODES): a full
# disk's, and only its.
STORAGE_FAILED_CODE = ExitCodes().code_for(STORAGE_FAILED)
SAFETY = ("outcome", "final-step", "final-evaluated", "export", "half-checkpoint",
          "restarted", "processes-left")
LIVENESS = ("late-exit", "chief-late", "recovery")


@dataclasses.dataclass(frozen=True)
class Violation:
    """A broken invariant: its name, the schedule's seed, and what shows it."""

    name: str
    seed: int | None
    evidence: tuple[str, ...]

    @property
    def liveness(self) -> bool:
        return self.name in LIVENESS

    def describe(self) -> str:
        kind = "liveness" if self.liveness else "safety"
        return f"{self.name} ({kind}, seed {self.seed}): " + "; ".join(self.evidence[:3])


def permanent(code: int) -> bool:
    """A code TFJob's ExitCode policy does not retry (1-127)."""
    return 1 <= code <= 127


def _task_of(pod: str) -> str:
    """demo-worker-0 -> worker:0."""
    name, _, index = pod.rpartition("-")
    return f"{name.rpartition('-')[2]}:{index}"


def _names_task(text: str, task: str) -> bool:
    """Whether `text` names `task` ("worker:1", not inside "worker:10" or "steps:1")."""
    return re.search(rf"(?<![\w:]){re.escape(task)}(?!\d)", text) is not None


def _outcome(ev: Evidence) -> Sequence[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    disk_full = any(a.applied and a.fault.kind == "disk-full" for a in ev.applied)
    bad = [e for e in ev.exits if permanent(e.code)
           and not (disk_full and e.code == STORAGE_FAILED_CODE)]
    if ev.phase != "Succeeded":
        # Every fault is recovered from: a restart, or (a full disk) the job submitted
        # again once there is room, which must then succeed.
        why = ("every fault was recoverable" if not disk_full else
               f"a full disk stops pods with {STORAGE_FAILED_CODE} only, and the job "
               f"submitted again must succeed")
        lines = [f"job {ev.phase} ({why}): {ev.reason}"]
        for e in bad[:2]:
            lines += [f"{e.pod} exited {e.code} at {e.at - ev.started:.1f}s",
                      *ev.tail(_task_of(e.pod), 6)]
        found.append(tuple(lines + [f"log: {ev.log_path}"]))
    elif bad:  # after the job's success: the policy no longer looks, a user does
        found.append(tuple(
            [f"{e.pod} exited {e.code} (permanent under ExitCode) at "
             f"{e.at - ev.started:.1f}s" for e in bad] + ev.tail(_task_of(bad[0].pod), 5)))
    return found


def _final_step(ev: Evidence) -> Sequence[tuple[str, ...]]:
    if ev.newest_step >= ev.max_steps:
        return []
    return ((f"newest checkpoint {ev.newest_checkpoint or 'none'} (step {ev.newest_step}) "
             f"< max_steps {ev.max_steps}",
             f"evaluator's result: {dict(ev.result) if ev.result else 'none'}"),)


def _final_evaluated(ev: Evidence) -> Sequence[tuple[str, ...]]:
    if ev.newest_checkpoint is None:
        return [("no checkpoint at all",)]
    final = [e for e in ev.evaluated
             if os.path.basename(e.path) == ev.newest_checkpoint or e.step >= ev.max_steps]
    if final:
        return []
    last = [f"{e.line.at - ev.started:.1f}s {e.line.text}" for e in ev.evaluated[-2:]]
    return ((f"the final checkpoint {ev.newest_checkpoint} was not evaluated",
             *(last or ["no evaluation logged"]), f"log: {ev.log_path}"),)


def _export(ev: Evidence) -> Sequence[tuple[str, ...]]:
    whole = [e for e in ev.exports if e.whole]
    if len(whole) == 1:
        return []
    partial = [f"{e.path} (missing {', '.join(e.missing)})" for e in ev.exports
               if not e.whole]
    return ((f"{len(whole)} whole final exports (want exactly 1)",
             *[e.path for e in whole], *partial),)


# A checkpoint counts as evaluated after it was complete when the watcher saw it
# complete within this much after the evaluator's line (the watcher polls, the
# log has 0.1 s resolution).
_SEEN_SLACK_SECS = 2.0


def _half_checkpoint(ev: Evidence) -> Sequence[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for e in ev.evaluated:
        name = os.path.basename(e.path)
        seen = ev.complete_at.get(name)
        if seen is None:
            found.append((f"evaluated {name} (step {e.step}), never seen with its .index "
                          f"and every data shard", f"{e.line.at - ev.started:.1f}s "
                          f"[{e.line.task}] {e.line.text}"))
        elif seen > e.line.at + _SEEN_SLACK_SECS:
            found.append((f"evaluated {name} at {e.line.at - ev.started:.1f}s, complete "
                          f"only at {seen - ev.started:.1f}s", e.line.text))
    return found


# A pod that exits within this of its kill or SIGTERM went down by the fault (one that
# lingers longer went down by something else: the job's end, a hang).
TAKEN_DOWN_SECS = 5.0


def _pod_of(ev: Evidence, task: str) -> str:
    """worker:1 -> the chief's pod name's job, e.g. demo-worker-1."""
    job = ev.chief.rsplit("-", 2)[0]
    task_type, _, index = task.partition(":")
    return f"{job}-{task_type}-{index}"


def _restarted(ev: Evidence) -> Sequence[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for a in ev.applied:
        if not a.applied or a.fault.kind not in ("kill", "sigterm"):
            continue
        if ev.ended is not None and a.at >= ev.ended:
            continue  # the job was over: nothing restarts a pod then
        pod = _pod_of(ev, a.fault.task)
        after = sorted((e for e in ev.exits if e.pod == pod and e.at >= a.at),
                       key=lambda e: e.at)
        if a.fault.kind == "sigterm" and after and after[0].code == 0:
            continue  # preempted as its role ended: done, not to be restarted
        if (after and after[0].code != 0 and ev.ended is not None
                and after[0].at >= ev.ended and after[0].at - a.at <= TAKEN_DOWN_SECS):
            continue  # the fault took it down once the job was over: nothing restarts it
        if any(e.pod == pod and e.what == "restarting" and e.at >= a.at
               for e in ev.pod_events):
            continue
        found.append((f"{a.fault.describe()} at {a.at - ev.started:.1f}s, and {pod} was "
                      f"not restarted (its exits after it: "
                      f"{[(e.code, round(e.at - ev.started, 1)) for e in after]})",
                      *ev.tail(a.fault.task, 4)))
    return found


def _recovery(ev: Evidence) -> Sequence[tuple[str, ...]]:
    applied = [a for a in ev.applied if a.applied]
    if not applied or ev.phase != "Succeeded":
        return []
    first = min(a.at for a in applied)
    anchor = max([a.over for a in applied]
                 + [e.at for e in ev.pod_events if e.what == "started" and e.at >= first])
    steps = sorted((at, _step(name)) for name, at in ev.complete_at.items())
    before = max((step for at, step in steps if at <= anchor), default=0)
    if before >= ev.max_steps:
        return []
    again = next((at for at, step in steps if at > anchor and step > before), None)
    if again is not None and again - anchor <= ev.recovery_secs:
        return []
    took = "never" if again is None else f"{again - anchor:.1f}s"
    return ((f"training went on {took} after {ev.fault_end_words} or the last pod "
             f"started (at {anchor - ev.started:.1f}s, step {before}; bound "
             f"{ev.recovery_secs:g}s)",
             f"checkpoints: {[(round(at - ev.started, 1), step) for at, step in steps]}"),)


def _step(name: str) -> int:
    number = name.rpartition("-")[2]
    return int(number) if number.isdigit() else 0


def _processes_left(ev: Evidence) -> Sequence[tuple[str, ...]]:
    if not ev.still_running:
        return []
    return ((f"still running when the run was over: {', '.join(ev.still_running)}",
             *_timeline(ev),
             *[line for pod in ev.still_running[:2] for line in ev.tail(_task_of(pod), 12)]),)


def _timeline(ev: Evidence) -> list[str]:
    """The job's end, each fault as applied, each pod's starts and exits, in time order
    (timed from the job's start): what a lingering pod's own lines cannot tell."""
    def at(secs: float) -> str:
        return f"{secs - ev.started:.1f}s"

    events = [(a.at, f"{at(a.at)} fault {a.fault.describe()}"
               + ("" if a.applied else f": not applied ({a.detail})")) for a in ev.applied]
    events += [(e.at, f"{at(e.at)} {e.pod} {e.what}") for e in ev.pod_events]
    events += [(x.at, f"{at(x.at)} {x.pod} exited {x.code}") for x in ev.exits]
    if ev.ended is not None:
        events.append((ev.ended, f"{at(ev.ended)} job {ev.phase}: {ev.reason}"))
    if ev.final_step_at is not None:
        events.append((ev.final_step_at, f"{at(ev.final_step_at)} a checkpoint at "
                       f"max_steps {ev.max_steps} is whole in model_dir"))
    return [text for _, text in sorted(events, key=lambda pair: pair[0])]


def _deadline(ev: Evidence, since: float) -> float:
    """The bound after the later of `since` and the last fault's end."""
    last = ev.last_fault_over
    return max(since, last if last is not None else since) + ev.bound_secs


def _last_exits(ev: Evidence) -> dict[str, float]:
    last: dict[str, float] = {}
    for e in ev.exits:
        last[e.pod] = max(last.get(e.pod, e.at), e.at)
    return last


def _late_exit(ev: Evidence) -> Sequence[tuple[str, ...]]:
    if ev.phase != "Succeeded" or ev.ended is None:
        return []
    deadline = _deadline(ev, ev.ended)
    found: list[tuple[str, ...]] = []
    for pod, at in sorted(_last_exits(ev).items()):
        if pod != ev.chief and at > deadline:
            anchor = ("the chief succeeded" if ev.last_fault_over is None
                      or ev.ended >= ev.last_fault_over else ev.fault_end_words)
            tail = ev.tail(_task_of(pod), 4)
            found.append((f"{pod} ended {at - deadline + ev.bound_secs:.1f}s after "
                          f"{anchor} (bound {ev.bound_secs:g}s)", *tail,
                          *_waited_for(ev, pod, tail)))
    return found


def _waited_for(ev: Evidence, late_pod: str, tail: Sequence[str]) -> list[str]:
    """What a late pod's last lines name (a serving task waits for its workers): each
    named pod's starts, restarts and exits, and its last lines, so that the report
    says why it was waited for without the run's log."""
    said = " ".join(tail)
    pods = {e.pod for e in ev.exits} | {e.pod for e in ev.pod_events}
    named = sorted(pod for pod in pods if pod != late_pod and _names_task(said, _task_of(pod)))
    lines: list[str] = []
    for pod in named:
        marks = sorted([(e.at, e.what) for e in ev.pod_events if e.pod == pod]
                       + [(e.at, f"exited {e.code}") for e in ev.exits if e.pod == pod])
        lines.append(f"{pod}: " + ", ".join(f"{what} at {at - ev.started:.1f}s"
                                            for at, what in marks))
        lines += ev.tail(_task_of(pod), 4)
    return lines


def _chief_late(ev: Evidence) -> Sequence[tuple[str, ...]]:
    if ev.phase != "Succeeded" or ev.ended is None or ev.final_step_at is None:
        return []
    deadline = _deadline(ev, ev.final_step_at)
    if ev.ended <= deadline:
        return []
    return ((f"{ev.chief} succeeded {ev.ended - deadline + ev.bound_secs:.1f}s after the "
             f"final checkpoint appeared (or {ev.fault_end_words}; bound "
             f"{ev.bound_secs:g}s)", *ev.tail(_task_of(ev.chief), 5)),)


CHECKS: dict[str, Callable[[Evidence], Sequence[tuple[str, ...]]]] = {
    "outcome": _outcome, "final-step": _final_step, "final-evaluated": _final_evaluated,
    "export": _export, "half-checkpoint": _half_checkpoint, "restarted": _restarted,
    "processes-left": _processes_left, "late-exit": _late_exit, "chief-late": _chief_late,
    "recovery": _recovery,
}


def _restart_never_made(ev: Evidence, task_type: str) -> float | None:
    """When a `task_type` pod last went to restart, if no start followed: the job ended
    while it waited (a finished TFJob restarts no pod); else None."""
    for pod in sorted({e.pod for e in ev.pod_events}):
        if not _task_of(pod).startswith(f"{task_type}:"):
            continue
        mine = sorted((e.at, e.what) for e in ev.pod_events if e.pod == pod)
        if mine and mine[-1][1] == "restarting":
            return mine[-1][0]
    return None


def not_judged(evidence: Evidence) -> dict[str, str]:
    """The invariants that do not apply to this run, each with why: what the job has
    not (an evaluator, an exporter) or what the run did not do (see the module doc)."""
    why: dict[str, str] = {}
    if not evidence.schedule.evaluator:
        for name in ("final-evaluated", "half-checkpoint", "export"):
            why[name] = "the job has no evaluator"
    elif evidence.export_name is None:
        why["export"] = "the job has no exporter (run_schedule's export_name names one)"
    applied = [a for a in evidence.applied if a.applied]
    ended = evidence.ended if evidence.ended is not None else float("inf")
    late = [a for a in applied if a.fault.task_type == "evaluator"
            and a.fault.kind in ("kill", "sigterm") and a.at >= ended]
    if late and evidence.schedule.evaluator:  # chaos seed 75 of the storage rerun
        for name in ("final-evaluated", "export"):
            why.setdefault(name, f"the evaluator was stopped ({late[0].fault.kind}) "
                                 f"{late[0].at - ended:.1f}s after the job had ended, and "
                                 "a finished TFJob restarts no pod")
    waiting = _restart_never_made(evidence, "evaluator")
    if waiting is not None and evidence.schedule.evaluator:  # storage seed 171
        for name in ("final-evaluated", "export"):
            why.setdefault(name, f"the evaluator was stopped {ended - waiting:.1f}s before "
                                 "the job ended and its restart, due after the end, was "
                                 "not made: a finished TFJob restarts no pod")
    if not any(a.fault.kind in ("kill", "sigterm") for a in applied):
        why["restarted"] = "no pod was killed or preempted"
    if not applied:
        why["recovery"] = "no fault was applied"
    return why


def check(evidence: Evidence) -> list[Violation]:
    """Every invariant (`CHECKS`) that applies to `evidence` (`not_judged` says which
    do not): its violations, safety ones first."""
    seed = evidence.schedule.seed
    skipped = not_judged(evidence)
    found = [Violation(name, seed, tuple(lines)) for name, checker in CHECKS.items()
             if name not in skipped for lines in checker(evidence)]
    return sorted(found, key=lambda v: v.liveness)
