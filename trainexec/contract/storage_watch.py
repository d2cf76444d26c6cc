"""No task waits on its storage forever: a bound on how long `model_dir` may not answer.

A network file server that stops answering makes every call on it block (a hard NFS
mount waits for ever); an object store that does not answer keeps TensorFlow's client
retrying for minutes. A task blocked so is neither failing nor working, and its
orchestrator cannot tell. `StorageWatch` looks at `model_dir` from a thread of its own
every `poll_secs` (a `stat` of the directory, which goes to the server once the
client's cache has expired); when one look has not come back after the storage's bound,
it says so and ends the task with the retryable storage code (`storage_unavailable`,
172), whatever the task's other threads are blocked in. A restart then waits on the
storage afresh, and the job goes on once it answers.

| storage | bound (`TRAINEXEC_STORAGE_STALL_SECS`) |
| --- | --- |
| local disk | none |
| network file system (NFS, FUSE) | 120 s |
| object storage (`gs://`) | 300 s (TensorFlow's GCS client rides out 503s for about 195 s) |

Example:
    ```python
    StorageWatch.for_model_dir("/mnt/nfs/run1", "worker:0").start()
    ```
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable, Mapping

from trainexec.contract.exit_codes import STORAGE_UNAVAILABLE, ExitCodes, flush_logs
from trainexec.contract.tensorflow_calls import ending, tensorflow_call
from trainexec.env_settings import seconds_setting
from trainexec.records.storage import LOCAL, NETWORK, OBJECT, storage_of

__all__ = ["ENV_VAR", "STALL_SECS", "StorageWatch", "disable_in_this_process", "stall_bound"]

logger = logging.getLogger(__name__)

ENV_VAR = "TRAINEXEC_STORAGE_STALL_SECS"
STALL_SECS = {LOCAL: 0.0, NETWORK: 120.0, OBJECT: 300.0}
POLL_SECS = 10.0


def stall_bound(model_dir: str, environ: Mapping[str, str] | None = None) -> float:
    """How long `model_dir`'s storage may not answer (0: no bound)."""
    default = STALL_SECS[storage_of(model_dir, environ).kind]
    return seconds_setting(ENV_VAR, default, "how long model_dir's storage may not answer "
                           "before a task exits with the retryable storage code; 0 turns "
                           "the bound off", environ)


def _probe(model_dir: str) -> None:
    if "://" not in model_dir:
        os.stat(model_dir)
        return
    import tensorflow as tf

    tf.io.gfile.exists(model_dir)


class StorageWatch:
    """Ends this task with the storage code when `model_dir` does not answer for
    `bound_secs` (see the module doc)."""

    def __init__(self, model_dir: str, task: str, bound_secs: float,
                 poll_secs: float = POLL_SECS,
                 probe: Callable[[str], None] = _probe,
                 exit_fn: Callable[[int], None] = os._exit,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.model_dir, self.task, self.bound_secs = model_dir, task, bound_secs
        self.poll_secs = poll_secs
        self._probe, self._exit, self._now = probe, exit_fn, monotonic
        self._stop = threading.Event()
        self.fired = False

    @classmethod
    def for_model_dir(cls, model_dir: str, task: str) -> "StorageWatch":
        return cls(model_dir, task, stall_bound(model_dir))

    def start(self) -> "StorageWatch":
        if self.bound_secs > 0 and not _disabled:
            threading.Thread(target=self._watch, name="trainexec-storage-watch",
                             daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_secs):
            if ending():  # the program is ending: a probe now would only park
                return
            if not self.look():
                return

    def look(self) -> bool:
        """One look (its own thread); False when it did not come back in time (the
        task is then ending)."""
        done = threading.Event()

        def probe() -> None:
            try:
                with tensorflow_call():  # gs:// is read through TensorFlow's client
                    self._probe(self.model_dir)
            except Exception:  # noqa: BLE001 - an answer, even an error: not a stall
                pass
            finally:
                done.set()

        threading.Thread(target=probe, name="trainexec-storage-probe", daemon=True).start()
        began = self._now()
        if done.wait(self.bound_secs) or self._stop.is_set() or ending():
            return True  # answered, stopped, or parked because the program is ending
        self.fired = True
        code = ExitCodes.from_env().code_for(STORAGE_UNAVAILABLE)
        logger.error("%s: storage unavailable: %s did not answer in %.0fs (a stat of it "
                     "still waiting: the file server or the bucket is not answering); "
                     "exiting %s: a restart waits on the storage afresh, and resumes from "
                     "the last whole checkpoint", self.task, self.model_dir,
                     self._now() - began, code)
        flush_logs()
        self._exit(code)
        return False


_disabled: list[bool] = []


def disable_in_this_process() -> None:
    """No watch in this process: for one that runs roles in-process (a test runner),
    which must not be ended for a storage its own test made slow."""
    _disabled.append(True)
