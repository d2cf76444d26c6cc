"""A training peer (a worker) leaves by itself once the chief has finished.

The chief's success decides the job (TFJob's success policy: the chief exits 0). A
worker normally returns from training with the chief and leaves within a second of its
finished record. But a worker can stay inside TensorFlow after that:

* MultiWorkerMirroredStrategy: on the multi-host test bed, after a partition had
  restarted the group, worker:0 had saved its part of the last checkpoint and was
  still running more than 10 s after the chief had exited 0;
* an Estimator worker (TF 2.15, chaos seed 48 of issue 36) still creating its session
  when the ps was killed and restarted never went on, and the run was over.

TFJob's default `cleanPodPolicy: None` then leaves the pod holding its node, and a ps
waits for the worker's finished record.

`PeerWatchdog` bounds that. A daemon thread looks every `poll_secs` for the
chief's finished record or this run's completion record (both written by the
chief before it exits; `trainexec.records.finished_tasks`); once `linger_secs` have
passed since it saw one and the task still has not stopped the watchdog (it
does when training returns), it

1. logs where every thread is (a stack dump, to stderr), so the log says
   what the task was waiting for;
2. records that the task finished (`record_finished`: the role sequence's record,
   `trainexec.tasks.training`), removes its temporary directories
   (the trainer's `cleanup`, e.g. `trainexec.keras.faults.scratch.remove_all`), and
3. ends the process with exit code 0: the job's result is the chief's, in
   `model_dir` already, and nothing a peer still does can change it.

Example:
    ```python
    watchdog = PeerWatchdog(FinishedTasks.starting_now(model_dir, "worker:0"),
                            chief="chief:0", task="worker:0", model_dir=model_dir,
                            record_finished=record_finished).start()
    try:
        train()
    finally:
        watchdog.stop()
    ```
"""

from __future__ import annotations

import faulthandler
import logging
import os
import sys
import threading
from typing import Callable

from trainexec.clock import Clock, SystemClock
from trainexec.contract.exit_codes import flush_logs
from trainexec.contract.tensorflow_calls import tensorflow_call
from trainexec.records.finished_tasks import FinishedTasks

__all__ = ["LINGER_SECS", "PeerWatchdog"]

logger = logging.getLogger(__name__)

# How long a peer may still run once the chief recorded finishing (the chief
# exits right after; TFJob then counts the job as succeeded).
LINGER_SECS = 5.0


class PeerWatchdog:
    """Ends this peer (exit 0) `linger_secs` after the chief finished (module doc)."""

    def __init__(self, watch: FinishedTasks, chief: str, task: str, model_dir: str,
                 record_finished: Callable[[], None],
                 linger_secs: float = LINGER_SECS, poll_secs: float = 0.5,
                 clock: Clock | None = None,
                 exit_fn: Callable[[int], None] | None = None,
                 cleanup: Callable[[], None] = lambda: None) -> None:
        # A watch of its own (its cache is not shared with the training thread's).
        self._watch = FinishedTasks(model_dir, watch.since_nsec)
        self.chief = chief
        self.task = task
        self.model_dir = model_dir
        self._record_finished = record_finished
        self.linger_secs = linger_secs
        self.poll_secs = poll_secs
        self._clock = clock or SystemClock()
        self._exit = exit_fn or os._exit
        self._cleanup = cleanup
        self._stopped = threading.Event()
        self._chief_done_at: float | None = None
        self.left = False

    def start(self) -> "PeerWatchdog":
        threading.Thread(target=self._run, name="trainexec-peer-watchdog",
                         daemon=True).start()
        return self

    def stop(self) -> None:
        """The task returned by itself: the watchdog does nothing more."""
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                with tensorflow_call():  # its reads may sit in TensorFlow's GCS client
                    if self.check():
                        return
            except Exception as err:  # a file system hiccup: look again, never die
                logger.warning("%s watchdog could not read the finished records: %s",
                               self.task, err)
            self._clock.sleep(self.poll_secs)

    def check(self) -> bool:
        """One look; True once it made the task leave (see the module doc)."""
        if self._stopped.is_set() or self.left:
            return self.left
        now = self._clock.now()
        if self._chief_done_at is None:
            if self.chief not in self._watch.finished() and not self._watch.completed_since():
                return False
            self._chief_done_at = now
        if now - self._chief_done_at < self.linger_secs or self._stopped.is_set():
            return False
        self.left = True
        self._leave(now - self._chief_done_at)
        return True

    def _leave(self, waited: float) -> None:
        try:
            logger.warning(
                "%s finished training %.0fs ago and %s is still running inside TensorFlow "
                "(its threads' stacks follow on stderr): leaving now with exit code 0, the "
                "job's result is the chief's", self.chief, waited, self.task)
            flush_logs()
            try:
                faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            except (OSError, ValueError, AttributeError):  # no usable stderr
                pass
            try:
                self._record_finished()
            except Exception as err:  # OSError, or TensorFlow's file system error
                logger.warning("Could not record that %s finished: %s", self.task, err)
            self._cleanup()
            flush_logs()
        finally:
            self._exit(0)
