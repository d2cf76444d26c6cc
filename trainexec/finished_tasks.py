"""Which training tasks have finished, recorded under the model directory.

Each training task (chief, master, worker) writes
`<model_dir>/trainexec/finished/<type>-<index>.json` when its training
returns::

    {"task": "worker:1", "finished_at": 1763772000.5}

A parameter server reads them to exit once every training task of its cluster
has finished, instead of serving forever (tensorflow/tensorflow#25858). It
counts only records written after it started, so an earlier run's records in
the same model_dir do not end it early. A task that crashes writes nothing,
and the ps keeps serving until it is restarted and finishes.

Example::

    record_task_finished(model_dir, "worker:1")
    finished_since(model_dir, started_at)  # {"chief:0", "worker:1"}
"""

from __future__ import annotations

import json
import logging
import time

from trainexec.completion import atomic_write_text

__all__ = ["FINISHED_DIR", "finished_since", "record_task_finished"]

logger = logging.getLogger(__name__)

FINISHED_DIR = "trainexec/finished"


def _directory(model_dir: str) -> str:
    return f"{model_dir.rstrip('/')}/{FINISHED_DIR}"


def record_task_finished(model_dir: str, task: str, wall_time: float | None = None) -> None:
    """Records (atomically) that `task` ("worker:1") has finished training."""
    path = f"{_directory(model_dir)}/{task.replace(':', '-')}.json"
    finished_at = time.time() if wall_time is None else wall_time
    atomic_write_text(path, json.dumps({"task": task, "finished_at": finished_at}))
    logger.info("Recorded that %s finished training in %s", task, path)


def finished_since(model_dir: str, since: float) -> set[str]:
    """The tasks that recorded finishing at or after wall time `since`."""
    import tensorflow as tf

    directory = _directory(model_dir)
    try:
        names = tf.io.gfile.listdir(directory)
    except tf.errors.NotFoundError:
        return set()
    finished = set()
    for name in names:
        if not name.endswith(".json"):
            continue  # a temporary file being renamed into place
        try:
            with tf.io.gfile.GFile(f"{directory}/{name}", "r") as f:
                record = json.loads(f.read())
            if float(record["finished_at"]) >= since:
                finished.add(str(record["task"]))
        except tf.errors.NotFoundError:
            continue
        except (ValueError, KeyError, TypeError) as err:
            logger.warning("Ignoring unreadable record %s/%s: %s", directory, name, err)
    return finished
