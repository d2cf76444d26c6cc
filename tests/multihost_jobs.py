"""Helpers for the demo jobs as TFJobs on a multi-host bed (trainexec.testing): the job of
each mode, the chief's progress, the pods that ended late, the matrix report and the
faults. Used by tests/cluster/test_multihost_storage.py (and meant for
tests/cluster/test_multihost_jobs.py, whose copies of these predate this module)."""

from __future__ import annotations

import functools
import json
import os
import signal
import threading
import time
from typing import Callable, Mapping

from trainexec.records import checkpoints
# The chaos suite's job and its modes: MultiWorkerMirrored, ParameterServer,
# tf.estimator's Estimator (2.15 line), and trainexec.estimator's own (the current line).
from trainexec.testing.chaos import MAX_STEPS, MODES, JobPaths, Schedule
from trainexec.testing.chaos import demo_job as chaos_demo_job
from trainexec.testing.kubelet import TFJobSpec

__all__ = ["FAULTS", "FAULT_SECS", "MAX_STEPS", "MODES", "Progress", "demo_job",
           "keras_line", "late_pods", "mode_skip", "newest_step", "pod_lags", "report"]


def keras_line() -> str | None:
    """Why the Keras jobs do not run on this line (None: they do). They run on current
    TensorFlow, with Keras 3 or tf_keras (as TF_USE_LEGACY_KERAS says); TF 2.15 runs the
    Estimator's."""
    import tensorflow as tf

    if tf.__version__.startswith("2.15"):
        return ("Keras jobs run on separate hosts on the current TensorFlow line (Keras 3 "
                "and tf_keras); this line runs the Estimator job's")
    return None


def mode_skip(mode: str) -> str | None:
    """Why `mode`'s job does not run on this line (None: it does)."""
    import tensorflow as tf

    from tf_lines import estimator_missing

    if mode == "estimator":
        missing = estimator_missing()
        return f"needs tf.estimator: {missing}" if missing else None
    if mode == "native-estimator":
        if tf.__version__.startswith("2.15"):
            return ("trainexec.estimator's job runs on separate hosts on the current "
                    "TensorFlow line; this line runs tf.estimator's")
        return None
    return keras_line()


def demo_job(mode: str, model_dir: str, env: Mapping[str, str] = {},
             result_file: str | None = None) -> TFJobSpec:
    """The demo job of `mode` as a TFJob: a chief, two workers, an evaluator (and a ps
    for "pss" and "estimator"), model_dir as the pods see it, the evaluator's final
    result in `result_file` (default model_dir/final_result.json). The public
    `trainexec.testing.chaos.demo_job`, the job the chaos suite runs, without faults."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: use one of {MODES}")
    paths = JobPaths(model_dir, result_file or os.path.join(model_dir, "final_result.json"),
                     dict(env))
    return chaos_demo_job(Schedule.explicit(mode, []), paths, MAX_STEPS)


def newest_step(model_dir: str) -> int:
    """The step of the newest checkpoint the chief has written (0: none yet)."""
    newest = checkpoints.latest_checkpoint(model_dir)
    return (newest.step or 0) if newest is not None else 0


class Progress:
    """Watches the chief's checkpoints: (monotonic time, newest step) at every change."""

    def __init__(self, model_dir: str | Callable[[], int], poll_secs: float = 0.2) -> None:
        # A local model_dir, or what reads the newest step where the test cannot look
        # (object storage).
        self.newest_step = model_dir if callable(model_dir) else functools.partial(
            newest_step, model_dir)
        self.poll_secs = poll_secs
        self.steps: list[tuple[float, int]] = [(time.monotonic(), 0)]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_secs):
            step = self.newest_step()
            if step != self.steps[-1][1]:
                self.steps.append((time.monotonic(), step))

    def step_at(self, moment: float) -> int:
        return max([step for at, step in self.steps if at <= moment], default=0)

    def training_again(self, since: float) -> float | None:
        """Seconds from `since` until a checkpoint newer than any before it appeared."""
        before = self.step_at(since)
        return next((at - since for at, step in self.steps if at > since and step > before),
                    None)


def pod_lags(outcome) -> dict[str, float]:
    """Seconds from the job's success (the chief's) to each pod's last exit."""
    last_exit = {}
    for event in outcome.events:
        if event.what == "exited":
            last_exit[event.pod] = event.at
    return {pod: round(at - outcome.ended, 1) for pod, at in last_exit.items()
            if outcome.ended is not None}


def late_pods(outcome, fault_ends: float | None, settle_secs: float) -> list[str]:
    """The pods whose program ended more than `settle_secs` after the chief succeeded,
    or after the fault ended when it outlasted the job (a pod frozen or cut off then
    cannot end before it is thawed or reconnected)."""
    deadline = max(outcome.ended, fault_ends or 0.0) + settle_secs
    last_exit = {}
    for event in outcome.events:
        if event.what == "exited":
            last_exit[event.pod] = event.at
    return sorted(pod for pod, at in last_exit.items() if at > deadline)


def report(row: dict) -> None:
    """Appends the row's figures to $TRAINEXEC_MATRIX_REPORT (JSON lines), if set."""
    path = os.environ.get("TRAINEXEC_MATRIX_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


FAULT_SECS = 30.0  # how long a freeze or a partition lasts
FAULTS = {
    "kill": lambda run, task, i: run.kill(task, i, signal.SIGKILL),
    "term": lambda run, task, i: run.kill(task, i, signal.SIGTERM),
    "freeze": lambda run, task, i: run.freeze(task, i, FAULT_SECS),
    "partition": lambda run, task, i: run.partition(task, i, FAULT_SECS),
}
