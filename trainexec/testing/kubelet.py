"""A TFJob run on a `TestBed`: pods on separate hosts, restarted as Kubeflow's operator does.

`TFJobRun` plays the part of the Kubeflow training operator (v1.9) and the
kubelet for one TFJob: one pod per replica, each on its own host of a
`trainexec.testing.netns.TestBed`, reachable as `<job>-<type>-<i>.<namespace>.svc`,
with the TF_CONFIG the operator writes (every replica type in `cluster`, the
evaluator too, `"environment": "cloud"`, port 2222). When a pod's program ends
it applies the replica's `restartPolicy` while the job runs (none after it ended):

* `ExitCode`: 1-127 are permanent (the job fails), 128-255 and death by a
  signal (reported as 128 + the signal, as a container's exit code is) are
  retried: the pod starts again on the same host;
* `OnFailure` / `Always`: any failure is retried; `Never`: none.

The job succeeds as the operator decides (`successPolicy` ""): when the chief
(the master; worker 0 without either) exits 0; with `AllWorkers`, when every
worker has. Pods still running then are left running (`cleanPodPolicy: None`):
`still_running()` names them. Faults: `kill` (a signal), `freeze` (SIGSTOP, then
SIGCONT) and `partition` (the pod's host cut off the bridge for a while).

With a bed made with `shared_dir` (`trainexec.testing.storage.SharedDir`), the
pods share a directory as a cluster's hosts share NFS: give them a model_dir on
its view (`shared_dir.on_hosts("model")`) and read what they wrote where
`run.on_machine(path)` says (the backing directory, behind no cache). The pods'
programs each run on their own host (hostname, pid namespace, mounts): see
`trainexec.testing.netns`.

Example:
    ```python
    job = TFJobSpec("demo", {"Chief": Replicas(1), "Worker": Replicas(2)},
                    command=[sys.executable, "-m", "trainexec.examples.keras_job", ...])
    with TestBed(job.hosts(), domain=job.domain) as bed, TFJobRun(job, bed) as run:
        run.wait_for(lambda: run.pod("worker", 1).started, 60)
        run.kill("worker", 1)
        outcome = run.wait(timeout=300)
    assert outcome.phase == SUCCEEDED
    ```
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
import threading
import time
from typing import Callable, Mapping, Sequence, TextIO

from trainexec.testing.netns import TestBed
from trainexec.testing.tfjob_spec import (Replicas, TFJobSpec, exit_code_of, log_line,
                                          tf_config_for)

__all__ = ["FAILED", "RUNNING", "SUCCEEDED", "Event", "JobOutcome", "Pod", "Replicas",
           "TFJobRun", "TFJobSpec", "exit_code_of", "log_line", "tf_config_for"]

logger = logging.getLogger(__name__)

RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"

@dataclasses.dataclass(frozen=True)
class Event:
    """Something that happened to the job, at `time.monotonic()` `at`."""

    at: float
    pod: str
    what: str  # "started", "exited", "restarting", "fault", "succeeded", "failed"
    detail: str = ""
    code: int | None = None


@dataclasses.dataclass
class Pod:
    """One pod: its program's runs on its host."""

    task_type: str
    index: int
    name: str
    restart_policy: str
    proc: subprocess.Popen | None = None
    restarts: int = 0
    exit_code: int | None = None  # of the last run; None while running
    started: float | None = None  # time.monotonic() of the current run's start
    ended: float | None = None
    done: bool = False  # ended and not restarted
    lines: list[str] = dataclasses.field(default_factory=list)  # the current run's output

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def program(self) -> subprocess.Popen:
        """The current run's process; RuntimeError before the pod's first run."""
        if self.proc is None:
            raise RuntimeError(f"pod {self.name} has not started: it has no program yet")
        return self.proc


@dataclasses.dataclass(frozen=True)
class JobOutcome:
    """How the job ended (`phase`), when, and every event."""

    phase: str
    reason: str
    started: float
    ended: float | None
    events: tuple[Event, ...]

    @property
    def wall_secs(self) -> float | None:
        return None if self.ended is None else self.ended - self.started


class TFJobRun:
    """Runs one TFJob on a bed (see the module doc); a context manager that
    kills every pod's program on exit."""

    def __init__(self, job: TFJobSpec, bed: TestBed, output: TextIO | None = None,
                 restart_delay_secs: float = 1.0, poll_secs: float = 0.1) -> None:
        self.job = job
        self.bed = bed
        self.output = output
        self.restart_delay_secs = restart_delay_secs
        self.poll_secs = poll_secs
        self.pods = [Pod(t, i, job.pod_name(t, i), job.restart_policy(t))
                     for t, i in job.pods()]
        self.events: list[Event] = []
        self.phase = RUNNING
        self.reason = ""
        self.started = time.monotonic()
        self.ended: float | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._timers: list[threading.Timer] = []
        self._fault_ends: list[tuple[threading.Timer, Callable[[], None]]] = []

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> "TFJobRun":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self) -> None:
        self.started = time.monotonic()
        for pod in self.pods:
            self._start(pod)
        self._watcher.start()

    def close(self) -> None:
        """Stops watching and kills every pod's program (and its session)."""
        with self._lock:  # no restart starts a program after this
            self._stop.set()
            for timer in self._timers:
                timer.cancel()
            for pod in self.pods:
                if pod.proc is not None and pod.proc.poll() is None:
                    try:
                        os.killpg(pod.proc.pid, signal.SIGCONT)
                        os.killpg(pod.proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            for pod in self.pods:
                if pod.proc is not None:
                    try:
                        pod.proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        pass
        # A fault's end not yet played is played now (one its timer is playing is waited
        # for): the bed outlives this run, and a job submitted again on it must not find
        # a host still cut off.
        for timer, end in self._fault_ends:
            try:
                end()
            except Exception:  # a bed that cannot mend says so; the rest still end
                logger.exception("%s: a fault's end could not be played", self.job.name)
            timer.join(timeout=10)
        if self._watcher.is_alive():
            self._watcher.join(timeout=5)

    # -- storage ------------------------------------------------------------------------
    def storage_env(self) -> dict[str, str]:
        """What every pod gets in its environment for the bed's shared storage (set
        before the job's own `env`, which wins)."""
        shared = self.bed.shared_dir
        return dict(shared.pod_env()) if shared is not None else {}

    def on_machine(self, path_on_pods: str) -> str:
        """Where the test reads a path the pods use: on the bed's shared directory
        (`TestBed(shared_dir=...)`), its backing path; any other path as it is."""
        shared = self.bed.shared_dir
        if shared is None:
            return path_on_pods
        try:
            return shared.on_machine(path_on_pods)
        except ValueError:
            return path_on_pods

    # -- looking ------------------------------------------------------------------------
    def pod(self, task_type: str, index: int = 0) -> Pod:
        return next(p for p in self.pods if (p.task_type, p.index) == (task_type, index))

    def said(self, task_type: str, index: int, words: str) -> bool:
        """Whether the pod's current run has printed a line containing `words`."""
        return any(words in line for line in list(self.pod(task_type, index).lines))

    def wait_for(self, predicate: Callable[[], bool], timeout: float,
                 what: str = "condition") -> float:
        """Waits until `predicate()`; returns when (monotonic). AssertionError after
        `timeout` seconds, or when the job ended first."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            if self.phase != RUNNING:
                raise AssertionError(f"the job ended ({self.phase}: {self.reason}) "
                                     f"before {what}")
            time.sleep(0.05)
        return time.monotonic()

    def wait(self, timeout: float, settle_secs: float = 10.0) -> JobOutcome:
        """Waits for the job to succeed or fail, then up to `settle_secs` for the
        pods still running to end by themselves (they are left running, as
        `cleanPodPolicy: None` leaves them)."""
        deadline = time.monotonic() + timeout
        while self.phase == RUNNING and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.phase == RUNNING:
            with self._lock:
                self.phase, self.reason = FAILED, f"timed out after {timeout:g}s"
                self.ended = time.monotonic()
        settle_until = (self.ended or time.monotonic()) + settle_secs
        while (any(p.proc is not None and p.ended is None for p in self.pods)
               and time.monotonic() < settle_until):
            time.sleep(0.05)
        time.sleep(2 * self.poll_secs)  # the watcher records the last ends
        return JobOutcome(self.phase, self.reason, self.started, self.ended,
                          tuple(self.events))

    def still_running(self) -> list[str]:
        """Pods whose program has not ended (by the watcher's record)."""
        with self._lock:
            return [p.name for p in self.pods if p.proc is not None and p.ended is None]

    # -- faults -------------------------------------------------------------------------
    def kill(self, task_type: str, index: int = 0, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` to the pod's program (SIGKILL: the node lost it; SIGTERM: a
        preemption or an eviction)."""
        pod = self.pod(task_type, index)
        with self._lock:
            self._event(pod, "fault", signal.Signals(sig).name)
            os.killpg(pod.program().pid, sig)

    def freeze(self, task_type: str, index: int, secs: float) -> None:
        """Stops the pod's program (SIGSTOP) for `secs`, then lets it go on."""
        pod = self.pod(task_type, index)
        with self._lock:
            proc = pod.program()
            self._event(pod, "fault", f"frozen for {secs:g}s")
            os.killpg(proc.pid, signal.SIGSTOP)

        def thaw() -> None:
            with self._lock:
                try:
                    os.killpg(proc.pid, signal.SIGCONT)
                except ProcessLookupError:
                    return
                self._event(pod, "fault", "thawed")
        self._fault_end_later(secs, thaw)

    def partition(self, task_type: str, index: int, secs: float) -> None:
        """Cuts the pod's host off the bridge for `secs`."""
        pod = self.pod(task_type, index)
        self._event(pod, "fault", f"link down for {secs:g}s")
        self.bed.link_down(pod.name)

        def mend() -> None:
            self.bed.link_up(pod.name)
            self._event(pod, "fault", "link up")
        self._fault_end_later(secs, mend)

    def _later(self, secs: float, action: Callable[[], None]) -> threading.Timer:
        timer = threading.Timer(secs, action)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()
        return timer

    def _fault_end_later(self, secs: float, end: Callable[[], None]) -> None:
        """`end()` in `secs`, once: by its timer, or by `close()` if that comes first."""
        once = threading.Lock()

        def end_once() -> None:
            if once.acquire(blocking=False):
                end()
        self._fault_ends.append((self._later(secs, end_once), end_once))

    # -- the operator -------------------------------------------------------------------
    def _start(self, pod: Pod) -> None:
        env = {**os.environ, **self.storage_env(), **self.job.env,
               "TF_CONFIG": tf_config_for(self.job, pod.task_type, pod.index)}
        env.pop("TRAINEXEC_LAUNCH_DIR", None)  # not under trainexec launch here
        pod.proc = self.bed.popen(pod.name, list(self.job.command), env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, bufsize=1)
        pod.started, pod.ended, pod.exit_code, pod.done = time.monotonic(), None, None, False
        pod.lines = []  # `said()` speaks of this run only
        reader = threading.Thread(target=self._read, args=(pod, pod.proc), daemon=True)
        reader.start()
        self._event(pod, "started", f"pid {pod.proc.pid}")

    def _read(self, pod: Pod, proc: subprocess.Popen) -> None:
        task = f"{pod.task_type}:{pod.index}"
        lines = pod.lines  # this run's list: a restart gives the pod a new one
        assert proc.stdout is not None, "started with stdout=PIPE (`_start`)"
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if self.output is not None:
                try:
                    self.output.write(f"{time.monotonic() - self.started:7.1f} "
                                      f"{log_line(task, line)}\n")
                    self.output.flush()
                except ValueError:  # output closed
                    pass

    def _event(self, pod: Pod | None, what: str, detail: str = "",
               code: int | None = None) -> None:
        event = Event(time.monotonic(), pod.name if pod else self.job.name, what, detail,
                      code)
        self.events.append(event)
        logger.info("%.1fs %s %s %s", event.at - self.started, event.pod, what, detail)

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_secs):
            with self._lock:
                for pod in self.pods:
                    if pod.proc is None or pod.ended is not None:
                        continue
                    returncode = pod.proc.poll()
                    if returncode is None:
                        continue
                    self._ended(pod, exit_code_of(returncode))

    def _ended(self, pod: Pod, code: int) -> None:
        pod.ended, pod.exit_code = time.monotonic(), code
        self._event(pod, "exited", f"exit code {code}", code)
        # Once the job has succeeded or failed the operator restarts nothing.
        if code != 0 and self.phase == RUNNING and self._restarts(pod.restart_policy, code):
            pod.restarts += 1
            self._event(pod, "restarting", f"restart {pod.restarts} ({pod.restart_policy})")
            self._later(self.restart_delay_secs, lambda: self._restart(pod))
            return
        pod.done = True
        if self.phase != RUNNING:
            return
        if code != 0:
            self._finish(FAILED, f"{pod.name} failed with exit code {code} "
                         f"(restartPolicy {pod.restart_policy})")
        elif self._succeeded():
            self._finish(SUCCEEDED, f"{pod.name} succeeded")

    def _restart(self, pod: Pod) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            if self.phase == RUNNING:
                self._start(pod)
            else:  # the job ended while the pod waited to restart: it stays down
                pod.done = True

    @staticmethod
    def _restarts(policy: str, code: int) -> bool:
        if policy == "Never":
            return False
        if policy == "ExitCode":
            return code >= 128
        return True

    def _succeeded(self) -> bool:
        done = {(p.task_type, p.index) for p in self.pods if p.done and p.exit_code == 0}
        if self.job.success_policy == "AllWorkers":
            workers = [(p.task_type, p.index) for p in self.pods if p.task_type == "worker"]
            return bool(workers) and all(w in done for w in workers)
        for lead in ("chief", "master"):
            if any(p.task_type == lead for p in self.pods):
                return (lead, 0) in done
        return ("worker", 0) in done

    def _finish(self, phase: str, reason: str) -> None:
        self.phase, self.reason, self.ended = phase, reason, time.monotonic()
        self._event(None, phase.lower(), reason)
