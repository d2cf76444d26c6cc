"""Finding checkpoints and telling complete ones from ones still being written.

Two kinds of checkpoint are understood:

* A TensorFlow (V2) checkpoint `prefix` (Estimators, `tf.train.Checkpoint`,
  TF-format Keras 2 weights). It is complete when `prefix.index` and every
  `prefix.data-NNNNN-of-MMMMM` shard exist and the index can be read. Writers
  put the data shards down first and the index last, and only then name the
  prefix in the directory's `checkpoint` state file; copies and some file
  systems do not keep that order, so evaluators check before they load.
* A Keras file: `*.weights.h5` (HDF5 weights) or `*.keras` (a zip of the whole
  model), as `keras.callbacks.ModelCheckpoint` writes them on Keras 3 and on
  Keras 2. There is no state file: files whose names carry numbers
  (`ckpt-{epoch}.weights.h5`, `ckpt-{epoch}-{batch}.keras`) are ordered by
  those numbers, left to right. Both are written in place, not renamed, and
  no lock crosses hosts (HDF5's `flock` is local to one machine, and sites turn
  it off on NFS with `HDF5_USE_FILE_LOCKING=FALSE`), so an HDF5 file counts as
  still being written while it cannot be opened or any of its datasets cannot
  be read, and a zip until its closing directory is there and every member
  reads. The continuous evaluation loop also waits until such a file has not
  changed over one more look (`trainexec.evaluation.loop`).

Example:
    ```python
    latest = latest_checkpoint(model_dir)            # from the state file
    latest = latest_keras_checkpoint(ckpt_dir)       # Keras files or the state file
    if latest and is_complete(latest.path):
        ...
    ```
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import time
import zipfile
from typing import Any, Callable, Iterator

from trainexec.records.checkpoint_state import STATE_FILE, read_checkpoint_state

__all__ = [
    "KERAS_FILE_SUFFIXES",
    "CheckpointInfo",
    "checkpoint_order",
    "checkpoint_step",
    "data_damage",
    "disappeared",
    "file_state",
    "incomplete_reason",
    "is_complete",
    "is_keras_file",
    "keras_files",
    "latest_checkpoint",
    "latest_keras_checkpoint",
    "listed_checkpoints",
    "missing_files",
    "open_hdf5",
]

logger = logging.getLogger(__name__)

KERAS_FILE_SUFFIXES = (".weights.h5", ".keras")

_STEP_SUFFIX = re.compile(r"-(\d+)$")
_NUMBER = re.compile(r"\d+")
_SHARD = re.compile(r"\.data-(\d+)-of-(\d+)$")


@dataclasses.dataclass(frozen=True)
class CheckpointInfo:
    """A checkpoint prefix and the training step in its name (None if none)."""

    path: str
    step: int | None

    @classmethod
    def from_path(cls, path: str) -> "CheckpointInfo":
        return cls(path=path, step=checkpoint_step(path))


def is_keras_file(path: str) -> bool:
    """True for a `.weights.h5` or `.keras` file (as ModelCheckpoint writes)."""
    return path.endswith(KERAS_FILE_SUFFIXES)


def _keras_stem(path: str) -> str:
    name = os.path.basename(path)
    for suffix in KERAS_FILE_SUFFIXES:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def checkpoint_step(path: str) -> int | None:
    """The number a checkpoint's name ends in, else None.

    `model.ckpt-1200` -> 1200; `ckpt-7.weights.h5` -> 7; `ckpt-2-40.keras` -> 40.
    """
    if is_keras_file(path):
        numbers = _NUMBER.findall(_keras_stem(path))
        return int(numbers[-1]) if numbers else None
    match = _STEP_SUFFIX.search(os.path.basename(path))
    return int(match.group(1)) if match else None


def checkpoint_order(path: str) -> tuple[int, ...] | None:
    """The numbers in a checkpoint's name, for ordering; None if it has none.

    A TensorFlow prefix orders by its step suffix (`model.ckpt-1200` -> (1200,));
    a Keras file by every number in its name, left to right
    (`ckpt-2-40.weights.h5` -> (2, 40): epoch 2, batch 40).
    """
    if is_keras_file(path):
        numbers = tuple(int(n) for n in _NUMBER.findall(_keras_stem(path)))
        return numbers or None
    step = checkpoint_step(path)
    return None if step is None else (step,)


def missing_files(prefix: str) -> list[str]:
    """Files a complete checkpoint at `prefix` has and this one lacks."""
    import tensorflow as tf

    missing = []
    if not tf.io.gfile.exists(prefix + ".index"):
        missing.append(prefix + ".index")
    shards = tf.io.gfile.glob(tf.io.gfile.join(
        os.path.dirname(prefix), _glob_escape(os.path.basename(prefix)) + ".data-*-of-*"))
    counts = {int(m.group(2)) for m in map(_SHARD.search, shards) if m}
    if not counts:
        missing.append(prefix + ".data-00000-of-00001")
        return missing
    total = max(counts)
    present = {int(m.group(1)) for m in map(_SHARD.search, shards)
               if m and int(m.group(2)) == total}
    missing.extend(f"{prefix}.data-{i:05d}-of-{total:05d}"
                   for i in range(total) if i not in present)
    return missing


def _glob_escape(name: str) -> str:
    return re.sub(r"([*?\[\]])", r"[\1]", name)


def incomplete_reason(prefix: str) -> str | None:
    """Why the checkpoint at `prefix` (or Keras file) cannot be loaded yet, or None."""
    import tensorflow as tf

    if is_keras_file(prefix):
        return _keras_file_problem(prefix)
    missing = missing_files(prefix)
    if missing:
        return "missing " + ", ".join(os.path.basename(m) for m in missing)
    try:
        tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as err:
        return f"unreadable {os.path.basename(prefix)}.index ({type(err).__name__})"
    return None


def disappeared(path: str) -> bool:
    """True when files of the checkpoint at `path` (or the Keras file) are gone.

    For a checkpoint found complete before, that means its trainer deleted it
    (`keep_checkpoint_max` rotation) or is deleting it.
    """
    import tensorflow as tf

    try:
        if is_keras_file(path):
            return not tf.io.gfile.exists(path)
        return bool(missing_files(path))
    except tf.errors.OpError:  # the file system cannot tell now: not known gone
        return False


def data_damage(path: str) -> str | None:
    """What is wrong with the data of the checkpoint at `path`, read in full;
    None when all of it reads.

    A TensorFlow checkpoint: every tensor. A data shard cut short or damaged
    passes `incomplete_reason` (the files are there and the index reads); only
    reading the tensors finds it. A Keras file: the zip's CRCs and every HDF5
    dataset.
    """
    if is_keras_file(path):
        return _keras_file_damage(path)
    import tensorflow as tf

    name = "the index"
    try:
        reader = tf.train.load_checkpoint(path)
        for name in sorted(reader.get_variable_to_dtype_map()):
            reader.get_tensor(name)
    # A shard shorter than the index says reads as IndexError (OutOfRange
    # through the Python reader); a checksum mismatch as OpError.
    except (tf.errors.OpError, IndexError, ValueError, RuntimeError) as err:
        lines = str(err).strip().splitlines()
        return f"{type(err).__name__} reading {name}: {lines[0] if lines else ''}"
    return None


def _keras_file_damage(path: str) -> str | None:
    import h5py
    import tensorflow as tf

    def read(name: str, item: Any) -> None:  # None: visititems goes on
        if isinstance(item, h5py.Dataset):
            item[()]

    try:
        if not path.endswith(".keras"):
            with open_hdf5(path) as h5:
                h5.visititems(read)
            return None
        with tf.io.gfile.GFile(path, "rb") as raw, zipfile.ZipFile(raw) as archive:
            bad = archive.testzip()
            if bad is not None:
                return f"{bad} in the archive fails its CRC check"
            for name in archive.namelist():
                if name.endswith(".h5"):
                    with archive.open(name) as member, h5py.File(member, "r") as h5:
                        h5.visititems(read)
        return None
    except (OSError, KeyError, ValueError, RuntimeError, EOFError, zipfile.BadZipFile,
            tf.errors.OpError) as err:
        lines = str(err).strip().splitlines()
        return f"{type(err).__name__}: {lines[0] if lines else ''}"


@contextlib.contextmanager
def open_hdf5(path: str) -> Iterator[Any]:
    """An HDF5 file, read-only: by name when local (HDF5 then checks its lock:
    a file its writer still holds raises BlockingIOError), through TensorFlow's
    file system for URLs (gs://...)."""
    import h5py

    if "://" not in path:
        with h5py.File(path, "r") as h5:
            yield h5
        return
    import tensorflow as tf

    with tf.io.gfile.GFile(path, "rb") as raw, h5py.File(raw, "r") as h5:
        yield h5


def file_state(path: str) -> tuple:
    """Names, sizes and modification times of a checkpoint's files: when this
    changes, its writer is still at work."""
    import tensorflow as tf

    pattern = _glob_escape(path) + ("" if is_keras_file(path) else ".*")
    try:
        names = sorted(tf.io.gfile.glob(pattern))
    except tf.errors.OpError:
        return ()
    state = []
    for name in names:
        try:
            stat = tf.io.gfile.stat(name)
        except tf.errors.OpError:
            continue
        state.append((name, stat.length, stat.mtime_nsec))
    return tuple(state)


def is_complete(prefix: str) -> bool:
    """True when every file of the checkpoint exists and its index reads."""
    return incomplete_reason(prefix) is None


def _keras_file_problem(path: str) -> str | None:
    import tensorflow as tf

    if not tf.io.gfile.exists(path):
        return "missing " + os.path.basename(path)
    if path.endswith(".keras"):
        # The zip's central directory is written last: without it, the archive
        # is still being written (or was cut short).
        try:
            with tf.io.gfile.GFile(path, "rb") as f, zipfile.ZipFile(f) as archive:
                if not any(name.endswith(".h5") or name.endswith(".npz")
                           for name in archive.namelist()):
                    return "a zip without model weights"
        except (zipfile.BadZipFile, OSError, EOFError, tf.errors.OpError) as err:
            return f"not a complete .keras archive ({type(err).__name__})"
        damage = _keras_file_damage(path)
        return None if damage is None else f"not readable whole yet ({damage})"
    return _hdf5_problem(path)


def _hdf5_problem(path: str) -> str | None:
    try:
        with open_hdf5(path):
            pass
    except BlockingIOError:  # a local file HDF5 has locked: its writer still has it
        return "still held open by its writer"
    except (OSError, ValueError, KeyError) as err:
        return f"unreadable HDF5 ({type(err).__name__})"
    damage = _keras_file_damage(path)  # read whole: another host's writer holds no lock here
    return None if damage is None else f"not readable whole yet ({damage})"


def keras_files(directory: str) -> list[str]:
    """`.weights.h5` and `.keras` files in `directory` whose names carry numbers,
    oldest (smallest numbers) first."""
    import tensorflow as tf

    paths: list[str] = []
    for suffix in KERAS_FILE_SUFFIXES:
        try:
            paths.extend(tf.io.gfile.glob(tf.io.gfile.join(
                _glob_escape(directory), "*" + suffix)))
        except tf.errors.OpError:
            continue
    numbered = [p for p in paths if checkpoint_order(p) is not None]
    return sorted(numbered, key=lambda p: (checkpoint_order(p), p))


def _mtime_ns(path: str) -> int:
    import tensorflow as tf

    try:
        return tf.io.gfile.stat(path).mtime_nsec
    except tf.errors.OpError:
        return -1


def latest_keras_checkpoint(directory: str) -> CheckpointInfo | None:
    """The newest checkpoint of a Keras or custom-loop run in `directory`.

    That is the highest-numbered `.weights.h5` / `.keras` file, or the
    TensorFlow checkpoint the state file names (CheckpointManager); when a
    directory has both, the one written last.
    """
    files = keras_files(directory)
    newest_file = files[-1] if files else None
    from_state = latest_checkpoint(directory)
    if newest_file is None:
        return from_state
    if from_state is not None and (_mtime_ns(from_state.path + ".index")
                                   > _mtime_ns(newest_file)):
        return from_state
    return CheckpointInfo.from_path(newest_file)


# Reading the state file again after it did not parse: it is replaced whole (a
# temporary file renamed, an object uploaded), so the next read is of one version.
_STATE_RETRY_SECS = (0.2, 0.5, 1.0)


def latest_checkpoint(directory: str, sleep: Callable[[float], None] = time.sleep
                      ) -> CheckpointInfo | None:
    """The newest checkpoint of `directory`, or None when it has none.

    On a file system it is the prefix the state file names, when that
    checkpoint's index is there (as `tf.train.latest_checkpoint` answers); where no
    state file is found, the newest checkpoint a listing finds (an NFS client can
    hold "no such file" for a minute: `_newest_listed_without_state`). The
    state file is read whole (`read_checkpoint_state`), and one that does not
    parse is never taken for "no checkpoint": it is read again
    (`_STATE_RETRY_SECS` apart), and if it still does not parse, the newest
    checkpoint is the highest-numbered prefix whose `.index` a listing finds.

    On object storage (a URL: gs://...) the listing comes first: the state
    file is an object rewritten at every save, which TensorFlow's client reads
    through a cache of its size (tensorflow#15530, #18276), while the listing of
    a bucket is strongly consistent and no cache stands in front of it. Only a
    directory whose checkpoints carry no step number in their names is read
    from the state file there.
    """
    on_object_storage = "://" in str(directory)
    if on_object_storage:
        listed = listed_checkpoints(directory)
        if listed:
            return listed[-1]
    import tensorflow as tf

    error: Exception | None = None
    for pause in (*_STATE_RETRY_SECS, None):
        try:
            state = read_checkpoint_state(directory)
        except ValueError as err:
            error = err
        except tf.errors.OpError as err:  # the storage could not answer now
            error = err
        else:
            if state is None:  # no state file seen: a listing may still find checkpoints
                return None if on_object_storage else _newest_listed_without_state(directory)
            return CheckpointInfo.from_path(state.latest) if _exists(state.latest) else None
        if pause is not None:
            sleep(pause)
    listed = listed_checkpoints(directory)
    logger.warning("Reading %s/%s failed %d times (%s); the newest checkpoint is taken from "
                   "a listing of the directory instead: %s", str(directory).rstrip("/"),
                   STATE_FILE, len(_STATE_RETRY_SECS) + 1, error,
                   listed[-1].path if listed else "none")
    return listed[-1] if listed else None


def _newest_listed_without_state(directory: str) -> CheckpointInfo | None:
    """The newest listed checkpoint of a directory whose state file was not found.

    An NFS client caches a name it found absent (lookupcache=all, up to acdirmax: 60 s by
    default), so a task that looked for the state file before the first save, and a task
    restarted on that host, can find no state file while the checkpoints are there; a
    listing reads the directory itself. Chaos seed 8 (NFS-like views): a MWMS worker
    restarted after its job had finished did not skip training and waited for peers that
    had left; its host had looked for the state file 7 s in, before the first save (the
    likely cause, not proven from the log)."""
    listed = listed_checkpoints(directory)
    if not listed:
        return None
    if directory not in _LISTED_WITHOUT_STATE:  # said once per directory, not every poll
        _LISTED_WITHOUT_STATE.add(directory)
        logger.info("No %s/%s found, but a listing finds checkpoints (newest %s): the "
                    "directory's checkpoints are found by listing while that lasts",
                    str(directory).rstrip("/"), STATE_FILE, listed[-1].path)
    return listed[-1]


_LISTED_WITHOUT_STATE: set[str] = set()


def _exists(prefix: str) -> bool:
    import tensorflow as tf

    try:
        return bool(tf.io.gfile.exists(prefix + ".index") or tf.io.gfile.exists(prefix))
    except tf.errors.OpError:
        return False


def listed_checkpoints(directory: str) -> list[CheckpointInfo]:
    """The TensorFlow checkpoints in `directory` that have an index, by a listing
    (not the state file), oldest (lowest step) first; prefixes without a step
    number are left out."""
    import tensorflow as tf

    try:
        indexes = tf.io.gfile.glob(f"{_glob_escape(str(directory).rstrip('/'))}/*.index")
    except tf.errors.OpError:
        return []
    found = [CheckpointInfo.from_path(name[:-len(".index")]) for name in indexes]
    return sorted((c for c in found if c.step is not None), key=lambda c: (c.step, c.path))
