"""The record that training has finished, kept under the model directory.

When the chief's (or a local run's) training returns, it writes
`<model_dir>/trainexec/training_complete.json`::

    {"global_step": 1000, "checkpoint": ".../model.ckpt-1000",
     "max_steps": 1000, "finished_at": 1763772000.5}

Evaluators (the Estimator evaluator task and `SidecarEvaluator`) read it to stop
after the last checkpoint even when `max_steps` is None. A chief starting a new
run clears it first. The file is written to a temporary name and renamed, so a
reader never sees half of it.

Example::

    record_training_complete(model_dir, checkpoint, global_step=1000, max_steps=1000)
    done = read_training_complete(model_dir)
    if done and done.matches(max_steps=1000): ...
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from typing import Any

__all__ = [
    "COMPLETION_FILE",
    "TrainingComplete",
    "atomic_write_text",
    "clear_training_complete",
    "completion_path",
    "file_system_now",
    "model_dir_path",
    "read_training_complete",
    "read_json_file",
    "record_training_complete",
    "write_json_record",
]

logger = logging.getLogger(__name__)

COMPLETION_FILE = "trainexec/training_complete.json"


@dataclasses.dataclass(frozen=True)
class TrainingComplete:
    """What the chief recorded when training returned."""

    global_step: int | None
    checkpoint: str | None
    max_steps: int | None
    finished_at: float

    def matches(self, max_steps: int | None) -> bool:
        """False when the record is from an earlier run with other `max_steps`."""
        return max_steps is None or self.max_steps is None or self.max_steps == max_steps


def model_dir_path(model_dir: str, relative: str) -> str:
    """`relative` under `model_dir` (a local path or a URL such as gs://...)."""
    return f"{model_dir.rstrip('/')}/{relative}"


def completion_path(model_dir: str) -> str:
    return model_dir_path(model_dir, COMPLETION_FILE)


def atomic_write_text(path: str, text: str) -> None:
    """Writes `text` to `path` via a temporary file and a rename.

    When the write or the rename fails, the temporary file is removed and the
    error raised: nothing is left beside `path`.
    """
    import tensorflow as tf

    tf.io.gfile.makedirs(path.rsplit("/", 1)[0])
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with tf.io.gfile.GFile(tmp, "w") as f:
            f.write(text)
        tf.io.gfile.rename(tmp, path, overwrite=True)
    except BaseException:
        try:
            if tf.io.gfile.exists(tmp):
                tf.io.gfile.remove(tmp)
        except tf.errors.OpError as err:
            logger.warning("Could not remove the temporary file %s: %s", tmp, err)
        raise


def file_system_now(directory: str) -> float:
    """The time (seconds since the epoch) by the clock of `directory`'s file system.

    File times are stamped by the server of a shared file system (NFS, GCS), not
    by this machine: compare them with this, not with `time.time()`, and clock
    skew between machines does not matter. Writes and removes a small file.
    """
    import tensorflow as tf

    probe = f"{directory.rstrip('/')}/.now-{uuid.uuid4().hex}"
    tf.io.gfile.makedirs(directory)
    try:
        with tf.io.gfile.GFile(probe, "w") as f:
            f.write("")
        return tf.io.gfile.stat(probe).mtime_nsec / 1e9
    finally:
        if tf.io.gfile.exists(probe):
            tf.io.gfile.remove(probe)


def write_json_record(path: str, record: Any) -> None:
    """Writes dataclass `record` to `path` as sorted JSON, atomically."""
    atomic_write_text(path, json.dumps(dataclasses.asdict(record), sort_keys=True))


def read_json_file(path: str) -> Any | None:
    """The JSON value stored at `path`; None when there is no such file.

    Raises ValueError when the file is not JSON.
    """
    import tensorflow as tf

    try:
        with tf.io.gfile.GFile(path, "r") as f:
            return json.loads(f.read())
    except tf.errors.NotFoundError:
        return None


def record_training_complete(model_dir: str, checkpoint: str | None,
                             global_step: int | None, max_steps: int | None,
                             wall_time: float | None = None) -> TrainingComplete:
    """Records that training finished at `checkpoint` (atomically)."""
    record = TrainingComplete(
        global_step=None if global_step is None else int(global_step),
        checkpoint=checkpoint,
        max_steps=None if max_steps is None else int(max_steps),
        finished_at=time.time() if wall_time is None else wall_time)
    write_json_record(completion_path(model_dir), record)
    logger.info("Recorded training complete at step %s in %s",
                record.global_step, completion_path(model_dir))
    return record


def read_training_complete(model_dir: str) -> TrainingComplete | None:
    """The completion record, or None when training has not finished."""
    path = completion_path(model_dir)
    try:
        data = read_json_file(path)
        if data is None:
            return None
        return TrainingComplete(
            global_step=data.get("global_step"), checkpoint=data.get("checkpoint"),
            max_steps=data.get("max_steps"), finished_at=float(data["finished_at"]))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        logger.warning("Ignoring unreadable completion record %s: %s", path, err)
        return None


def clear_training_complete(model_dir: str) -> None:
    """Removes an earlier run's record (a new run is starting)."""
    import tensorflow as tf

    path = completion_path(model_dir)
    if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)
        logger.info("Cleared the previous run's completion record %s", path)
