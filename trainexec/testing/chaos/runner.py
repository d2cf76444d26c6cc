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
from typing import Any, Callable

from trainexec.testing.chaos.invariants import (BOUND_SECS, STORAGE_FAILED_CODE,
                                                AppliedFault, Evidence, PodEvent, PodExit,
                                                check)
from trainexec.testing.chaos.observe import CheckpointWatcher, collect_log, export_dirs, step_of
from trainexec.testing.chaos.own_job import check_training_span
from trainexec.testing.chaos.schedule import Fault, Schedule
from trainexec.testing.chaos.report import (ChaosReport, baseline_training_secs,
                                            baseline_wall_secs, record_baseline,
                                            restarts_by_fault)
from trainexec.testing.chaos.storages import ChaosStorage, JobPaths, result_of, storage_for
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


# Each job mode's packaged job (`trainexec.examples.<module>`) and its own arguments.
_JOBS: dict[str, tuple[str, tuple[str, ...]]] = {
    "mwms": ("keras_job", ()),
    "pss": ("keras_job", ()),
    "estimator": ("estimator_job", ("--engine", "tf")),
    "native-estimator": ("estimator_job", ("--engine", "native")),
    "canned": ("canned_job", ("--model", "wide_deep")),
    "estimator-mwms": ("estimator_job", ("--strategy", "mwms", "--engine", "native")),
}


def demo_job(schedule: Schedule, paths: JobPaths, max_steps: int = MAX_STEPS) -> TFJobSpec:
    """The packaged demo job of the schedule's mode and shape as a TFJob
    (`trainexec.examples.keras_job`, `estimator_job` or `canned_job`)."""
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
    module, own = _JOBS[schedule.mode]
    # The Keras job checkpoints every 100 steps; the Estimator jobs evaluate at most
    # every 5 s, and their workers start 2 s after the chief.
    timing = (("--save-checkpoints-steps", "100") if module == "keras_job"
              else ("--throttle-secs", "5", "--worker-delay-secs", "2"))
    command = [sys.executable, "-m", f"trainexec.examples.{module}", *own,
               "--model-dir", paths.model_dir, "--max-steps", str(max_steps), *timing,
               "--result-file", paths.result_file]
    return TFJobSpec("demo", replicas, command=command, env=env)


def _apply(run: TFJobRun, storage: ChaosStorage, fault: Fault) -> None:
    if fault.on_storage:
        storage.apply(fault)
    elif fault.kind == "kill":
        run.kill(fault.task_type, fault.index, signal.SIGKILL)
    elif fault.kind == "sigterm":
        run.kill(fault.task_type, fault.index, signal.SIGTERM)
    elif fault.kind == "freeze":
        run.freeze(fault.task_type, fault.index, fault.duration_secs)
    else:
        run.partition(fault.task_type, fault.index, fault.duration_secs)


@dataclasses.dataclass
class _Attempt:
    """One submission of the job: how it ended, its log, what was left running."""

    outcome: Any
    log_path: str
    left: list
    restarts: dict


class _FaultPlayer:
    """Applies a schedule's faults at their times (counted from training's start), each
    on a thread of its own, and records what was applied."""

    def __init__(self, schedule: Schedule, storage: ChaosStorage,
                 clock: Callable[[], float]) -> None:
        self.schedule, self.storage, self.clock = schedule, storage, clock
        self.applied: list[AppliedFault] = []
        self.began: float | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self, run: TFJobRun, began: float) -> None:
        self.began = began
        self._threads = [threading.Thread(target=self._at_its_time, args=(run, fault),
                                          daemon=True) for fault in self.schedule.faults]
        for thread in self._threads:
            thread.start()

    def _at_its_time(self, run: TFJobRun, fault: Fault) -> None:
        assert self.began is not None
        delay = self.began + fault.at_secs - self.clock()
        if delay > 0 and self._stop.wait(delay):
            return
        now = self.clock()
        lingers = self._lingers_secs(fault)
        try:
            _apply(run, self.storage, fault)
            record = AppliedFault(fault, now, now + fault.duration_secs,
                                  lingers_secs=lingers)
        except (ProcessLookupError, AttributeError) as err:  # between restarts, ended
            record = AppliedFault(fault, now, now, applied=False,
                                  detail=f"not applied: {type(err).__name__} (the pod's "
                                         f"program was not running)")
        except Exception as err:  # the bed's own failure: said in the report, not lost
            logger.exception("chaos %s: %s could not be applied", self.schedule.label(),
                             fault.describe())
            record = AppliedFault(fault, now, now, applied=False,
                                  detail=f"not applied: the bed failed: "
                                         f"{type(err).__name__}: {err}")
        with self._lock:
            self.applied.append(record)
        logger.info("chaos %s: %s%s", self.schedule.label(), fault.describe(),
                    "" if record.applied else f" ({record.detail})")

    def _lingers_secs(self, fault: Fault) -> float:
        return self.storage.lingers_secs.get(fault.kind, 0.0) if fault.on_storage else 0.0

    def left_secs(self) -> float:
        """How long until the last fault is over, its lingering counted (0 before
        training began)."""
        if self.began is None or not self.schedule.faults:
            return 0.0
        over = max(f.ends_secs + self._lingers_secs(f) for f in self.schedule.faults)
        return max(0.0, self.began + over - self.clock())

    def finish(self) -> list[AppliedFault]:
        """Stops what is still due; records it as not applied."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        with self._lock:
            done = [a.fault for a in self.applied]
            for fault in self.schedule.faults:
                if fault in done:
                    done.remove(fault)
                    continue
                now = self.clock()
                self.applied.append(AppliedFault(
                    fault, now, now, applied=False,
                    detail=("not applied: every pod had ended before its time"
                            if self.began is not None else
                            "not applied: training never began")))
            return sorted(self.applied, key=lambda a: a.at)

    def disk_was_full(self) -> bool:
        return any(a.applied and a.fault.kind == "disk-full" for a in self.applied)


def _stopped_by_full_disk(outcome: Any, player: _FaultPlayer) -> bool:
    """Whether a full disk stopped the job, or a pod of it (the evaluator, say, after the
    chief had succeeded), with the storage's permanent code: its user then frees space
    and submits the job again."""
    if not player.disk_was_full():
        return False
    return outcome.phase != SUCCEEDED or any(
        e.what == "exited" and e.code == STORAGE_FAILED_CODE for e in outcome.events)


def run_schedule(schedule: Schedule, workdir: str, *, job: JobFactory | None = None,
                 max_steps: int = MAX_STEPS, export_name: str | None = None,
                 bound_secs: float | None = None, start_timeout_secs: float = 300.0,
                 timeout_secs: float = 900.0, grace_secs: float = 20.0,
                 baseline: bool = False, training_secs: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> ChaosReport:
    """Runs `schedule` on a fresh bed under `workdir` and checks every invariant.

    `bound_secs`: how soon every pod must end after the chief (default
    `BOUND_SECS` plus the storage's staleness, `storages.STORAGE_STALENESS_SECS`); the
    run waits that, the last fault's remaining time and `grace_secs` more for pods to
    end, so a late pod (liveness) is told from one that never ends (processes left).
    The schedule's own `max_steps`, if it has one, replaces `max_steps`. A job a full
    disk stopped (or a pod of it: the evaluator, say, once the chief had succeeded) is
    submitted again once the disk has room (as its user would), and judged on both
    submissions. With `baseline`, a run without faults of the same shape
    goes first, once per shape in this process. Root only
    (`trainexec.testing.netns.unavailable()`).

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
        if baseline_wall_secs(schedule, job) is None:
            base = run_schedule(schedule.without_faults(), os.path.join(workdir, "baseline"),
                                job=job, max_steps=max_steps, export_name=export_name,
                                bound_secs=bound_secs, start_timeout_secs=start_timeout_secs,
                                timeout_secs=timeout_secs, grace_secs=grace_secs)
            if baseline_wall_secs(schedule, job) is None:  # it failed: not a baseline
                logger.warning("chaos %s: the run without faults ended %s; no baseline",
                               schedule.label(), base.outcome)
        baseline_secs = baseline_wall_secs(schedule, job)
        if training_secs is None:
            check_training_span(schedule, baseline_training_secs(schedule, job))
    if schedule.max_steps is not None:
        max_steps = schedule.max_steps
    began_run = clock()
    os.makedirs(workdir, exist_ok=True)
    storage = storage_for(schedule.storage, workdir,
                          faults=any(f.on_storage for f in schedule.faults))
    bound = bound_secs if bound_secs is not None else BOUND_SECS + storage.staleness_secs
    player = _FaultPlayer(schedule, storage, clock)
    paths = storage.job_paths()
    spec = (job or (lambda s, p: demo_job(s, p, max_steps)))(schedule, paths)
    pods = set(spec.pods())
    missing = [t for t in schedule.tasks() if t not in pods]
    if missing:
        raise ValueError(f"the job has no pod for {missing}, which the schedule "
                         f"({schedule.shape()}) has")

    def submit(bed: Any, watcher: CheckpointWatcher, log_path: str, faults: bool
               ) -> _Attempt:
        with open(log_path, "w") as log, TFJobRun(spec, bed, output=log) as run:
            if faults:
                try:
                    run.wait_for(lambda: watcher.first_at is not None, start_timeout_secs,
                                 "training to begin (a first checkpoint)")
                    assert watcher.first_at is not None
                    player.start(run, watcher.first_at)
                except AssertionError as err:  # the job ended, or never began
                    logger.warning("chaos %s: %s", schedule.label(), err)
            remaining = max(0.0, timeout_secs - (clock() - run.started))
            # The job may end before the faults are due: they then go on, as they
            # would on a cluster, and count against the pods' ends.
            settle_secs = bound + player.left_secs() + grace_secs
            outcome = run.wait(timeout=remaining, settle_secs=0.0)
            if not (faults and outcome.phase != SUCCEEDED and player.disk_was_full()):
                outcome = run.wait(timeout=0.0, settle_secs=settle_secs)
            # else a full disk stopped the job: its user deletes it and submits it
            # again, so the pods it left (the evaluator waits for checkpoints) are
            # not waited for, and not judged: the resubmission's are.
            return _Attempt(outcome, log_path, run.still_running(),
                            {p.name: p.restarts for p in run.pods})

    with TestBed(spec.hosts() + list(storage.extra_hosts), domain=spec.domain,
                 **storage.bed_options()) as bed, storage.started(bed), \
            CheckpointWatcher(storage, max_steps, clock=clock) as watcher:
        try:
            attempts = [submit(bed, watcher, os.path.join(workdir, "pods.log"), True)]
            if _stopped_by_full_disk(attempts[0].outcome, player):
                time.sleep(player.left_secs())  # the disk has room again: resubmit
                attempts.append(submit(bed, watcher, os.path.join(workdir, "pods-2.log"),
                                       False))
        finally:  # no fault is played on a bed being taken down (an interrupted run)
            applied = player.finish()
        newest = watcher.newest()
        files = storage.files()
        result = result_of(storage)
    first, last = attempts[0].outcome, attempts[-1].outcome
    events = [e for attempt in attempts for e in attempt.outcome.events]
    restarts = {pod: sum(a.restarts.get(pod, 0) for a in attempts)
                for pod in attempts[-1].restarts}
    lines, evaluated = [], []
    for attempt in attempts:
        more_lines, more_evaluated = collect_log(attempt.log_path, attempt.outcome.started)
        lines += more_lines
        evaluated += more_evaluated
    chief = next((spec.pod_name(t, 0) for t in ("chief", "master") if (t, 0) in pods),
                 spec.pod_name("worker", 0))
    evidence = Evidence(
        schedule=schedule, max_steps=max_steps, phase=last.phase, reason=last.reason,
        started=first.started, ended=last.ended,
        exits=tuple(PodExit(e.pod, e.at, e.code) for e in events
                    if e.what == "exited" and e.code is not None),
        pod_events=tuple(PodEvent(e.pod, e.at, e.what) for e in events
                         if e.what in ("started", "restarting")),
        restarts=restarts, still_running=tuple(attempts[-1].left), chief=chief,
        applied=tuple(applied), training_began=player.began,
        newest_checkpoint=newest, newest_step=step_of(newest),
        final_step_at=watcher.final_step_at, evaluated=tuple(evaluated),
        complete_at=dict(watcher.complete_at),
        exports=tuple(export_dirs(files, f"export/{export_name}") if export_name else ()),
        result=result, lines=tuple(lines), log_path=attempts[0].log_path, bound_secs=bound,
        resubmitted=len(attempts) > 1, export_name=export_name)
    violations = check(evidence)
    wall = None if last.ended is None else last.ended - first.started
    report = ChaosReport(schedule, evidence, tuple(violations), wall, clock() - began_run,
                         restarts, restarts_by_fault(evidence.applied, events,
                                                     last.ended or clock()),
                         baseline_secs, workdir)
    if not schedule.faults and last.phase == SUCCEEDED:
        record_baseline(report, job)
    return report
