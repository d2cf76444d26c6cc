"""Records trainexec keeps beside a run: where they live, how they are written and read.

Every task of a job shares the model directory; trainexec's own records live
under `<model_dir>/trainexec/`::

    trainexec/training_complete.json   the chief's completion record (trainexec.records.completion)
    trainexec/finished/<task>.json     a training task's training returned (trainexec.records.finished_tasks)
    trainexec/started/<task>.json      a ps / serving worker started watching those
    trainexec/started/evaluator.json   the evaluator started (its records older are suspect)
    trainexec/eval[_<name>]/           the Estimator evaluator's own state (final export once)

An evaluator's state directory (the model directory, or a `SidecarEvaluator`'s
`state_dir`) holds `final_export.json`, `evaluator_lease.json`,
`sidecar_state.json` and each exporter's `best.json`.

This module is the one place that writes and reads them: a record is written
to a temporary name and renamed, so a reader never sees half of one; a record
that does not parse is reported once, named, and treated as absent; file times
come from the file system that holds the file (the server's clock on NFS or
GCS), so comparing two of them is immune to clock skew between machines.

Example:
    ```python
    path = record_path(model_dir, FINISHED_DIR + "/worker-1.json")
    write_json(path, {"task": "worker:1", "finished_at": time.time()})
    data = read_record(path, dict, "finished record")   # None: absent or unreadable
    if mtime_nsec(path) >= since_nsec: ...
    ```
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
import uuid
from typing import Any, Callable, TypeVar

__all__ = [
    "COMPLETION_FILE",
    "EVALUATOR_STARTED_FILE",
    "FINISHED_DIR",
    "RECORDS_DIR",
    "STARTED_DIR",
    "atomic_write_text",
    "eval_state_dir",
    "file_system_now",
    "listed",
    "make_watched_dir",
    "mtime_nsec",
    "read_json_file",
    "read_record",
    "read_whole",
    "record_path",
    "task_file_name",
    "task_of_file_name",
    "write_json",
    "write_json_record",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

RECORDS_DIR = "trainexec"
COMPLETION_FILE = f"{RECORDS_DIR}/training_complete.json"
FINISHED_DIR = f"{RECORDS_DIR}/finished"
STARTED_DIR = f"{RECORDS_DIR}/started"
EVALUATOR_STARTED_FILE = f"{STARTED_DIR}/evaluator.json"


def record_path(directory: str, relative: str) -> str:
    """`relative` under `directory` (a local path or a URL such as gs://...)."""
    return f"{str(directory).rstrip('/')}/{relative}"


def eval_state_dir(model_dir: str, eval_name: str | None) -> str:
    """The Estimator evaluator's state directory for `EvalSpec.name`."""
    return record_path(model_dir, f"{RECORDS_DIR}/eval_{eval_name}" if eval_name
                       else f"{RECORDS_DIR}/eval")


def task_file_name(task: str) -> str:
    """`worker:1` -> `worker-1.json` (a name every file system accepts)."""
    return task.replace(":", "-") + ".json"


def task_of_file_name(file_name: str) -> str:
    """`worker-1.json` -> `worker:1`."""
    job, _, index = file_name[:-len(".json")].rpartition("-")
    return f"{job}:{index}"


def atomic_write_text(path: str, text: str) -> None:
    """Writes `text` to `path` via a temporary file and a rename.

    When the write or the rename fails, the temporary file is removed and the
    error raised: nothing is left beside `path`. A local path is written with
    `os` (no TensorFlow loaded: the launcher's directory is written this way by
    tasks that may not use TensorFlow), a URL (gs://...) with `tf.io.gfile`.
    """
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    if "://" not in path:
        _write_local(path, tmp, text)
        return
    import tensorflow as tf

    tf.io.gfile.makedirs(path.rsplit("/", 1)[0])
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


def _write_local(path: str, tmp: str, text: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        except OSError as err:
            logger.warning("Could not remove the temporary file %s: %s", tmp, err)
        raise


def write_json(path: str, value: Any) -> None:
    """Writes `value` to `path` as sorted JSON, atomically."""
    atomic_write_text(path, json.dumps(value, sort_keys=True))


def write_json_record(path: str, record: Any) -> None:
    """Writes dataclass `record` to `path` as sorted JSON, atomically."""
    write_json(path, dataclasses.asdict(record))


_READ_CHUNK = 1 << 20
# How long a read may meet TensorFlow's GCS stat cache holding an object's older,
# longer size: GCS_STAT_CACHE_MAX_AGE (5 s by default), and a second for the request.
_INCONSISTENT_RETRY_SECS = 0.5


def read_whole(path: str, *, sleep: Callable[[float], None] = time.sleep,
               now: Callable[[], float] = time.monotonic) -> bytes:
    """Every byte of the file at `path`, read to its end.

    Not `GFile.read()`: that reads as many bytes as the file's size, and
    TensorFlow's GCS file system answers the size from its stat cache
    (`GCS_STAT_CACHE_MAX_AGE`, 5 s by default), so a small file that another
    process has just replaced with a longer one reads cut short at the older
    length (a `checkpoint` state file read as `model_checkpoint_path: "model`).
    Reading in chunks until one comes back empty asks the object itself. One
    replaced with a shorter version fails every read (`InternalError: File
    contents are inconsistent`) until the cached size expires: that is read
    again, `_INCONSISTENT_RETRY_SECS` apart, for as long as the cache may hold it.
    Raises `tf.errors.NotFoundError` when there is no such file.
    """
    if "://" not in path:
        with open(path, "rb") as f:
            return f.read()
    import tensorflow as tf

    from trainexec.records.storage import storage_of

    deadline = now() + storage_of(path).visibility_secs + 1.0
    while True:
        chunks: list[bytes] = []
        try:
            with tf.io.gfile.GFile(path, "rb") as f:
                while True:
                    chunk = f.read(_READ_CHUNK)
                    if not chunk:
                        return b"".join(chunks)
                    chunks.append(chunk)
        except tf.errors.InternalError as err:
            if "inconsistent" not in str(err) or now() >= deadline:
                raise
            logger.debug("%s changed size since its stat was cached; reading it again", path)
            sleep(_INCONSISTENT_RETRY_SECS)


def listed(path: str) -> bool:
    """Whether a listing of its directory shows the local file `path`.

    On a shared file system a failed look-up is remembered: an NFS client
    (lookupcache=all, the default) answers "no such file" for a name it looked
    up in vain for up to acdirmax (60 s) after, so a record another host writes
    meanwhile stays unseen that long. A listing reads the directory itself;
    looking a name up only once a listing shows it leaves no failed look-up to
    remember. False when the directory is missing too (make the directories such
    records land in before looking: `make_watched_dir`); True for a URL (gs://:
    no such cache) and for a directory this process may not list (the plain
    look-up decides).
    """
    if "://" in path:
        return True
    directory, name = os.path.split(path)
    try:
        return name in os.listdir(directory or ".")
    except (FileNotFoundError, NotADirectoryError):
        return False
    except PermissionError:
        return True


def make_watched_dir(directory: str) -> None:
    """Makes the local `directory` that other hosts will write records into, before
    this host first looks there: an NFS client remembers a missing directory as it
    does a missing file (`listed`). Nothing for a URL. A failure (a read-only
    model_dir) is logged and left: the records are then read when the client's
    cache lets them be.
    """
    if "://" in directory:
        return
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        logger.info("Could not make %s (%s): on a network file system records written "
                    "there by other hosts may be seen late", directory, err)


def read_json_file(path: str) -> Any | None:
    """The JSON value stored at `path` (read whole: `read_whole`); None when
    there is no such file.

    A local file is looked up only once a listing shows it (`listed`): a record
    another host writes is read as soon as it is there, on NFS too.
    Raises ValueError when the file is not JSON.
    """
    if not listed(path):
        return None
    if "://" not in path:
        try:
            text = read_whole(path)
        except FileNotFoundError:
            return None
    else:
        import tensorflow as tf

        try:
            text = read_whole(path)
        except tf.errors.NotFoundError:
            return None
    return json.loads(text.decode("utf-8"))


def read_record(path: str, parse: Callable[[Any], T], what: str) -> T | None:
    """`parse(JSON at path)`; None when the file is absent, and None with a
    warning naming `what` and `path` when it is not JSON or `parse` rejects it
    (ValueError, KeyError, TypeError, AttributeError)."""
    try:
        data = read_json_file(path)
        return None if data is None else parse(data)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        logger.warning("Ignoring unreadable %s %s: %s", what, path, err)
        return None


def mtime_nsec(path: str) -> int:
    """A file's modification time in ns, by the clock of its file system.

    `os.stat` for a local file (TensorFlow's stat rounds local times to whole
    seconds), TensorFlow's for a URL. Raises FileNotFoundError when there is
    no such file, whichever file system holds it.
    """
    if "://" not in path:
        return os.stat(path).st_mtime_ns
    import tensorflow as tf

    try:
        return tf.io.gfile.stat(path).mtime_nsec
    except tf.errors.NotFoundError as err:
        raise FileNotFoundError(path) from err


def file_system_now(directory: str) -> float:
    """The time (seconds since the epoch) by the clock of `directory`'s file system.

    File times are stamped by the server of a shared file system (NFS, GCS), not
    by this machine: compare them with this, not with `time.time()`, and clock
    skew between machines does not matter. Writes and removes a small file.
    """
    import tensorflow as tf

    probe = f"{str(directory).rstrip('/')}/.now-{uuid.uuid4().hex}"
    tf.io.gfile.makedirs(str(directory))
    try:
        with tf.io.gfile.GFile(probe, "w") as f:
            f.write("")
        return mtime_nsec(probe) / 1e9
    finally:
        if tf.io.gfile.exists(probe):
            tf.io.gfile.remove(probe)
