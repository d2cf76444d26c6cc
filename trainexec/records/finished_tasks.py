"""Which training tasks have finished, recorded under the model directory.

Each training task (chief, master, worker) writes
`<model_dir>/trainexec/finished/<type>-<index>.json` when its training
returns:

```json
{"task": "worker:1", "finished_at": 1763772000.5}
```

A parameter server watches them to exit once every training task of its
cluster has finished, instead of serving forever (tensorflow/tensorflow#25858).
It first writes its own start marker and counts only records modified at or
after it. Both times are the file system's (the server's clock on GCS or NFS),
so clock skew between machines does not matter, and an earlier run's records
in the same model_dir do not end it early.

The chief's completion record (`trainexec.records.completion`) counts the same way:
`completed_since()` is true when it was written at or after the marker, so it
is this run's (a new run's chief clears an earlier one first). The ps uses it
to stop when a training task crashed and was not restarted (see
`trainexec.estimator_trainer.hooks`).

Example:
    ```python
    record_task_finished(model_dir, "worker:1")              # a training task
    watch = FinishedTasks.starting_now(model_dir, "ps:0")    # the ps
    watch.finished()                                         # {"chief:0", "worker:1"}
    ```
"""

from __future__ import annotations

import logging
import time
from typing import AbstractSet

from trainexec.records.completion import completion_path
from trainexec.records.layout import (FINISHED_DIR, STARTED_DIR, listed, make_watched_dir,
                                     mtime_nsec, record_path, task_file_name,
                                     task_of_file_name, write_json)

__all__ = ["FINISHED_DIR", "FinishedTasks", "record_task_finished"]

logger = logging.getLogger(__name__)


def record_task_finished(model_dir: str, task: str, wall_time: float | None = None) -> None:
    """Records (atomically) that `task` ("worker:1") has finished training."""
    path = record_path(model_dir, f"{FINISHED_DIR}/{task_file_name(task)}")
    finished_at = time.time() if wall_time is None else wall_time
    write_json(path, {"task": task, "finished_at": finished_at})
    logger.info("Recorded that %s finished training in %s", task, path)


class FinishedTasks:
    """The training tasks whose finished record is not older than a start marker."""

    def __init__(self, model_dir: str, since_nsec: int) -> None:
        self.directory = record_path(model_dir, FINISHED_DIR)
        self.completion_path = completion_path(model_dir)
        self.since_nsec = since_nsec
        self._finished: set[str] = set()

    @classmethod
    def starting_now(cls, model_dir: str, watcher: str) -> "FinishedTasks":
        """Writes `watcher`'s start marker and watches records from then on."""
        marker = record_path(model_dir, f"{STARTED_DIR}/{task_file_name(watcher)}")
        write_json(marker, {"task": watcher, "started_at": time.time()})
        watch = cls(model_dir, mtime_nsec(marker))
        make_watched_dir(watch.directory)  # before this host first lists it
        return watch

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
        if not listed(self.completion_path):
            return False  # no failed look-up for NFS to remember (`layout.listed`)
        try:
            return mtime_nsec(self.completion_path) >= self.since_nsec
        except FileNotFoundError:
            return False

    def _records(self, skip: AbstractSet[str] = frozenset()) -> list[tuple[str, int]]:
        """(task, modification time in ns) of each finished record not in `skip`."""
        import tensorflow as tf

        try:
            names = tf.io.gfile.listdir(self.directory)
        except tf.errors.NotFoundError:
            return []
        records = []
        for name in names:
            if not name.endswith(".json") or task_of_file_name(name) in skip:
                continue  # a temporary file being renamed into place, or known
            try:
                modified = mtime_nsec(f"{self.directory}/{name}")
            except FileNotFoundError:
                continue
            records.append((task_of_file_name(name), modified))
        return records
