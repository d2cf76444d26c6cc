"""Which training tasks have finished, recorded under the model directory.

Each training task (chief, master, worker) writes
`<model_dir>/trainexec/finished/<type>-<index>.json` when its training
returns::

    {"task": "worker:1", "finished_at": 1763772000.5}

A parameter server watches them to exit once every training task of its
cluster has finished, instead of serving forever (tensorflow/tensorflow#25858).
It first writes its own start marker and counts only records modified at or
after it. Both times are the file system's (the server's clock on GCS or NFS),
so clock skew between machines does not matter, and an earlier run's records
in the same model_dir do not end it early.

The chief's completion record (`trainexec.completion`) counts the same way:
`completed_since()` is true when it was written at or after the marker, so it
is this run's (a new run's chief clears an earlier one first). The ps uses it
to stop when a training task crashed and was not restarted (see
`trainexec.estimator.roles.ps`).

Example::

    record_task_finished(model_dir, "worker:1")              # a training task
    watch = FinishedTasks.starting_now(model_dir, "ps:0")    # the ps
    watch.finished()                                         # {"chief:0", "worker:1"}
"""

from __future__ import annotations

import json
import logging
import time

from trainexec.completion import atomic_write_text, completion_path, model_dir_path

__all__ = ["FINISHED_DIR", "FinishedTasks", "record_task_finished"]

logger = logging.getLogger(__name__)

FINISHED_DIR = "trainexec/finished"
STARTED_DIR = "trainexec/started"


def _file_name(task: str) -> str:
    return task.replace(":", "-") + ".json"


def _task_of(file_name: str) -> str:
    job, _, index = file_name[:-len(".json")].rpartition("-")
    return f"{job}:{index}"


def record_task_finished(model_dir: str, task: str, wall_time: float | None = None) -> None:
    """Records (atomically) that `task` ("worker:1") has finished training."""
    path = model_dir_path(model_dir, f"{FINISHED_DIR}/{_file_name(task)}")
    finished_at = time.time() if wall_time is None else wall_time
    atomic_write_text(path, json.dumps({"task": task, "finished_at": finished_at}))
    logger.info("Recorded that %s finished training in %s", task, path)


class FinishedTasks:
    """The training tasks whose finished record is not older than a start marker."""

    def __init__(self, model_dir: str, since_nsec: int) -> None:
        self.directory = model_dir_path(model_dir, FINISHED_DIR)
        self.completion_path = completion_path(model_dir)
        self.since_nsec = since_nsec
        self._finished: set[str] = set()

    @classmethod
    def starting_now(cls, model_dir: str, watcher: str) -> "FinishedTasks":
        """Writes `watcher`'s start marker and watches records from then on."""
        import tensorflow as tf

        marker = model_dir_path(model_dir, f"{STARTED_DIR}/{_file_name(watcher)}")
        atomic_write_text(marker, json.dumps({"task": watcher, "started_at": time.time()}))
        return cls(model_dir, tf.io.gfile.stat(marker).mtime_nsec)

    def finished(self) -> set[str]:
        """Tasks that recorded finishing since the marker (new records only are read)."""
        for task, modified in self._records(skip=self._finished):
            if modified >= self.since_nsec:
                self._finished.add(task)
        return set(self._finished)

    def ever_finished(self) -> set[str]:
        """Tasks with a finished record of any age (this run's or an earlier one's)."""
        return {task for task, _ in self._records()}

    def completed_since(self) -> bool:
        """Whether the completion record was written at or after the marker."""
        import tensorflow as tf

        try:
            return tf.io.gfile.stat(self.completion_path).mtime_nsec >= self.since_nsec
        except tf.errors.NotFoundError:
            return False

    def _records(self, skip: set[str] = frozenset()) -> list[tuple[str, int]]:
        """(task, modification time in ns) of each finished record not in `skip`."""
        import tensorflow as tf

        try:
            names = tf.io.gfile.listdir(self.directory)
        except tf.errors.NotFoundError:
            return []
        records = []
        for name in names:
            if not name.endswith(".json") or _task_of(name) in skip:
                continue  # a temporary file being renamed into place, or known
            try:
                modified = tf.io.gfile.stat(f"{self.directory}/{name}").mtime_nsec
            except tf.errors.NotFoundError:
                continue
            records.append((_task_of(name), modified))
        return records
