"""Running a chaos `Schedule` on the multi-host bed, and what it found.

`run_schedule(schedule, workdir)` builds the TFJob (the packaged demo job of
the schedule's mode unless `job=` gives a factory of your own), starts it on a
`trainexec.testing.netns.TestBed` (model_dir as `storages` keeps it: a local
directory, NFS-like views, or a bucket of the GCS emulator),
waits until training has begun (the first checkpoint in model_dir), applies each
fault at its time on a thread of its own (so they may overlap), waits for the
job to end, and collects the `Evidence` that
`trainexec.testing.chaos.invariants.check` judges. Everything the pods printed
is in `<workdir>/pods.log`.

Your own job: a factory `(schedule, JobPaths) -> TFJobSpec` whose pods use
`paths.model_dir` (checkpoints, and exports under export/<export_name>/ if it has an
exporter), train to `max_steps`, and have the schedule's shape (`own_job.program_job`
writes one from a command). Its exports are judged only when `export_name` names its
exporter; the report says which invariants were judged and why others were not. A
schedule whose faults would start after the job has finished training is refused
(`own_job.JobTooShort`), by the training length a run without faults measured
(`baseline=True`) or the one given (`training_secs`).

Example:
    ```python
    def my_job(schedule, paths):
        return TFJobSpec("mine", {"Chief": Replicas(1), "Worker": Replicas(2),
                                  "Evaluator": Replicas(1)},
                         command=[sys.executable, "train.py", "--model-dir",
                                  paths.model_dir], env=paths.env)
    report = run_schedule(Schedule.generate(7, modes=("mwms",), training_secs=20),
                          "/tmp/chaos7", job=my_job, max_steps=1000, baseline=True)
    print(report.summary())
    ```
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import logging
import os
import signal
import sys
import threading
import time
from typing import Callable, Mapping, Sequence

from trainexec.testing.chaos.invariants import (BOUND_SECS, CHECKS, AppliedFault, Evidence,
                                                PodEvent, PodExit, Violation, check,
                                                not_judged)
from trainexec.testing.chaos.observe import CheckpointWatcher, collect_log, export_dirs, step_of
from trainexec.testing.chaos.own_job import check_training_span
from trainexec.testing.chaos.schedule import Fault, Schedule
from trainexec.testing.chaos.storages import JobPaths, result_of, storage_for
from trainexec.testing.kubelet import SUCCEEDED, Replicas, TFJobRun, TFJobSpec

# The directory holding this trainexec package (trainexec/testing/chaos/runner.py).
_TREE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

__all__ = ["MAX_STEPS", "ChaosReport", "JobFactory", "JobPaths", "baseline_wall_secs",
           "collect_log", "demo_job", "mode_unavailable", "run_schedule"]

logger = logging.getLogger(__name__)

MAX_STEPS = 1200


JobFactory = Callable[[Schedule, JobPaths], TFJobSpec]


def _tf_version() -> str:
    try:
        return importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return ""


def mode_unavailable(mode: str) -> str | None:
    """Why the packaged job of `mode` does not run on this TensorFlow line (None:
    it does). The Keras jobs and trainexec.estimator's run on current TensorFlow;
    tf.estimator's needs TensorFlow 2.15 with tensorflow-estimator."""
    version = _tf_version()
    if not version:
        return "TensorFlow is not installed"
    old = version.startswith("2.15")
    if mode == "estimator":
        if importlib.util.find_spec("tensorflow_estimator") is None:
            return "needs tf.estimator: TensorFlow 2.15 with tensorflow-estimator"
        return None
    if old:
        return (f"the {mode} job runs on separate hosts on the current TensorFlow line; "
                f"this is {version}")
    return None


def demo_job(schedule: Schedule, paths: JobPaths, max_steps: int = MAX_STEPS) -> TFJobSpec:
    """The packaged demo job of the schedule's mode and shape as a TFJob
    (`trainexec.examples.keras_job` or `estimator_job`)."""
    replicas = {"Chief": Replicas(1)}
    if schedule.workers:
        replicas["Worker"] = Replicas(schedule.workers)
    if schedule.ps:
        replicas["PS"] = Replicas(schedule.ps)
    if schedule.evaluator:
        replicas["Evaluator"] = Replicas(1)
    # The pods import this trainexec, installed or not.
    here = _TREE
    env = {"TF_CPP_MIN_LOG_LEVEL": "2",
           "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
           **paths.env}
    if schedule.mode in ("estimator", "native-estimator"):
        command = [sys.executable, "-m", "trainexec.examples.estimator_job",
                   "--engine", "tf" if schedule.mode == "estimator" else "native",
                   "--model-dir", paths.model_dir, "--max-steps", str(max_steps),
                   "--throttle-secs", "5", "--worker-delay-secs", "2",
                   "--result-file", paths.result_file]
    else:
        command = [sys.executable, "-m", "trainexec.examples.keras_job",
                   "--model-dir", paths.model_dir, "--max-steps", str(max_steps),
                   "--save-checkpoints-steps", "100", "--result-file", paths.result_file]
    return TFJobSpec("demo", replicas, command=command, env=env)


# -- the report ----------------------------------------------------------------------------
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


def baseline_wall_secs(schedule: Schedule, job: JobFactory | None = None) -> float | None:
    """The wall time of a run without faults of the schedule's shape (and `job`), if
    one ran in this process (`run_schedule(..., baseline=True)`)."""
    found = _BASELINES.get((schedule.shape_key(), job))
    return None if found is None else found[0]


def _restarts_by_fault(applied: Sequence[AppliedFault], events, end: float
                       ) -> tuple[tuple[str, int], ...]:
    done = [a for a in applied if a.applied]
    counts = []
    for i, a in enumerate(done):
        until = done[i + 1].at if i + 1 < len(done) else end
        counts.append((a.fault.describe(), sum(
            1 for e in events if e.what == "restarting" and a.at <= e.at < until)))
    return tuple(counts)


def _apply(run: TFJobRun, fault: Fault) -> None:
    if fault.kind == "kill":
        run.kill(fault.task_type, fault.index, signal.SIGKILL)
    elif fault.kind == "sigterm":
        run.kill(fault.task_type, fault.index, signal.SIGTERM)
    elif fault.kind == "freeze":
        run.freeze(fault.task_type, fault.index, fault.duration_secs)
    else:
        run.partition(fault.task_type, fault.index, fault.duration_secs)


def run_schedule(schedule: Schedule, workdir: str, *, job: JobFactory | None = None,
                 max_steps: int = MAX_STEPS, export_name: str | None = None,
                 bound_secs: float | None = None, start_timeout_secs: float = 300.0,
                 timeout_secs: float = 900.0, grace_secs: float = 20.0,
                 baseline: bool = False, training_secs: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> ChaosReport:
    """Runs `schedule` on a fresh bed under `workdir` and checks every invariant.

    `bound_secs`: how soon every pod must end after the chief (default
    `BOUND_SECS` plus the storage's staleness, `storages.STORAGE_STALENESS_SECS`); the run waits that, the
    last fault's remaining time and `grace_secs` more for pods to end, so a late
    pod (liveness) is told from one that never ends (processes left). With
    `baseline`, a run without faults of the same shape goes first, once per shape
    in this process. Root only (`trainexec.testing.netns.unavailable()`).

    `export_name`: the exporter whose exports the job writes (export/<name>/), judged
    by the `export` invariant; default "final" for the packaged job, and for a job of
    your own (`job`) none: its exports are not judged unless you name its exporter.
    `training_secs`: how long the job trains after its first checkpoint (default: what
    the baseline run measured, if any); a schedule with a fault starting later is
    refused before anything runs (`own_job.JobTooShort`)."""
    from trainexec.testing.netns import TestBed

    if export_name is None and job is None:
        export_name = "final"  # the packaged jobs' FinalExporter
    check_training_span(schedule, training_secs)
    baseline_secs = None
    if baseline and schedule.faults:
        known = _BASELINES.get((schedule.shape_key(), job))
        if known is None:
            base = run_schedule(schedule.without_faults(), os.path.join(workdir, "baseline"),
                                job=job, max_steps=max_steps, export_name=export_name,
                                bound_secs=bound_secs, start_timeout_secs=start_timeout_secs,
                                timeout_secs=timeout_secs, grace_secs=grace_secs)
            known = (base.wall_secs or 0.0, base.training_secs)
        baseline_secs = known[0] or None
        if training_secs is None:
            check_training_span(schedule, known[1])
    if schedule.max_steps is not None:
        max_steps = schedule.max_steps
    began_run = clock()
    os.makedirs(workdir, exist_ok=True)
    storage = storage_for(schedule.storage, workdir)
    bound = bound_secs if bound_secs is not None else BOUND_SECS + storage.staleness_secs
    log_path = os.path.join(workdir, "pods.log")
    applied: list[AppliedFault] = []
    lock = threading.Lock()

    def at_its_time(run: TFJobRun, fault: Fault, began: float, stop: threading.Event):
        delay = began + fault.at_secs - clock()
        if delay > 0 and stop.wait(delay):
            return
        now = clock()
        try:
            _apply(run, fault)
            record = AppliedFault(fault, now, now + fault.duration_secs)
        except (ProcessLookupError, AttributeError) as err:  # between restarts, ended
            record = AppliedFault(fault, now, now, applied=False,
                                  detail=f"not applied: {type(err).__name__} (the pod's "
                                         f"program was not running)")
        with lock:
            applied.append(record)
        logger.info("chaos %s: %s%s", schedule.label(), fault.describe(),
                    "" if record.applied else f" ({record.detail})")

    paths = storage.job_paths()
    spec = (job or (lambda s, p: demo_job(s, p, max_steps)))(schedule, paths)
    pods = set(spec.pods())
    missing = [t for t in schedule.tasks() if t not in pods]
    if missing:
        raise ValueError(f"the job has no pod for {missing}, which the schedule "
                         f"({schedule.shape()}) has")
    with TestBed(spec.hosts() + list(storage.extra_hosts), domain=spec.domain,
                 **storage.bed_options()) as bed, storage.started(bed):
        with open(log_path, "w") as log, TFJobRun(spec, bed, output=log) as run, \
                CheckpointWatcher(storage, max_steps, clock=clock) as watcher:
            stop = threading.Event()
            threads = []
            began = None
            try:
                run.wait_for(lambda: watcher.first_at is not None, start_timeout_secs,
                             "training to begin (a first checkpoint)")
                began = watcher.first_at
                threads = [threading.Thread(target=at_its_time, daemon=True,
                                            args=(run, fault, began, stop))
                           for fault in schedule.faults]
                for thread in threads:
                    thread.start()
            except AssertionError as err:  # the job ended, or never began
                logger.warning("chaos %s: %s", schedule.label(), err)
            remaining = max(0.0, timeout_secs - (clock() - run.started))
            fault_left = 0.0 if began is None else max(
                0.0, began + schedule.last_fault_end_secs - clock())
            # The job may end before the faults are due: they then go on, as they
            # would on a cluster, and count against the pods' ends.
            outcome = run.wait(timeout=remaining,
                               settle_secs=bound + fault_left + grace_secs)
            left = run.still_running()
            stop.set()
            for thread in threads:
                thread.join(timeout=5)
            with lock:  # faults whose time never came: every pod had ended first
                done = [a.fault for a in applied]
                for fault in schedule.faults:
                    if fault in done:
                        done.remove(fault)
                        continue
                    now = clock()
                    applied.append(AppliedFault(
                        fault, now, now, applied=False,
                        detail=("not applied: every pod had ended before its time"
                                if began is not None else
                                "not applied: training never began")))
            restarts = {p.name: p.restarts for p in run.pods}
            chief = next((spec.pod_name(t, 0) for t in ("chief", "master")
                          if (t, 0) in pods), spec.pod_name("worker", 0))
            newest = watcher.newest()
            files = storage.files()
            result = result_of(storage)
    lines, evaluated = collect_log(log_path, outcome.started)
    evidence = Evidence(
        schedule=schedule, max_steps=max_steps, phase=outcome.phase, reason=outcome.reason,
        started=outcome.started, ended=outcome.ended,
        exits=tuple(PodExit(e.pod, e.at, e.code) for e in outcome.events
                    if e.what == "exited" and e.code is not None),
        pod_events=tuple(PodEvent(e.pod, e.at, e.what) for e in outcome.events
                         if e.what in ("started", "restarting")),
        restarts=restarts, still_running=tuple(left), chief=chief,
        applied=tuple(sorted(applied, key=lambda a: a.at)), training_began=began,
        newest_checkpoint=newest, newest_step=step_of(newest),
        final_step_at=watcher.final_step_at, evaluated=tuple(evaluated),
        complete_at=dict(watcher.complete_at),
        exports=tuple(export_dirs(files, f"export/{export_name}") if export_name else ()),
        result=result, lines=tuple(lines), log_path=log_path, bound_secs=bound,
        export_name=export_name)
    violations = check(evidence)
    wall = outcome.wall_secs
    report = ChaosReport(schedule, evidence, tuple(violations), wall, clock() - began_run,
                         restarts, _restarts_by_fault(evidence.applied, outcome.events,
                                                      outcome.ended or clock()),
                         baseline_secs, workdir)
    if not schedule.faults and wall is not None and outcome.phase == SUCCEEDED:
        _BASELINES.setdefault((schedule.shape_key(), job), (wall, report.training_secs))
    return report
