"""Export directories: numbered exports, written atomically, interrupted ones cleaned up.

`ExportFileManager` owns the files of one exporter's directory
(`<model_dir>/export/<name>/`), apart from what an export writes: an export is
written under a temporary name in that directory (`.tmp-...`, which no reader
takes for a version) and then published as `<base_dir>/<number>` (a global
step, or a timestamp), so readers never see half of one:

* on a file system (local, NFS), by renaming the directory: atomic;
* on object storage (`gs://`), where a directory rename is a copy and a delete
  per object in name order (`saved_model.pb` before `variables/`), by copying
  every other file first and the SavedModel's `saved_model.pb` last. That file
  is what a SavedModel loader (TF Serving, `tf.saved_model.load`) needs, so a
  version without it is not a SavedModel to them, and trainexec counts an
  export only once it is there. A publication cut short (the writer killed)
  leaves a numbered directory without it: the next write of that number
  replaces it, and it is never counted, kept or garbage-collected as an export.

An existing whole export is never overwritten; the oldest exports beyond
`keep` are removed; temporary directories of exports whose writer is provably
gone (see `trainexec.records.liveness.Owner`) are removed. It knows nothing of the
model being saved: the caller passes the function that writes it.

Example:
    ```python
    files = ExportFileManager("/m/export/latest", keep=5)
    files.write(files.path_for(1200), lambda tmp: tf.saved_model.save(module, tmp))
    files.garbage_collect()
    ```
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from typing import Any

from trainexec.records.layout import file_system_now, mtime_nsec
from trainexec.records.liveness import ALIVE, GONE, Owner

__all__ = ["PUBLISHED_MARKER", "SAVED_MODEL_FILES", "STALE_EXPORT_SECS", "ExportFileManager",
           "is_whole", "publish"]

logger = logging.getLogger(__name__)

_TMP_PREFIX = ".tmp-"
# `.tmp-<number>-<uuid>-<owner tag>`; before owners were recorded, `.tmp-<number>-<uuid>`.
_TMP_NAME = re.compile(r"^\.tmp-\d+-[0-9a-f]{32}(?:-(?P<owner>.+))?$")
STALE_EXPORT_SECS = 3600.0

_WRITING: set[str] = set()  # temporary directories this process is writing now
_WRITING_LOCK = threading.Lock()


class ExportFileManager:
    """Names exports `<base_dir>/<number>` and removes the oldest beyond `keep`.

    Only directories named by an integer count as exports; `best.json` and
    temporary directories of exports being written (or interrupted) are not
    exports. A temporary directory's name carries its writer (see
    `trainexec.records.liveness.Owner`), so that `remove_interrupted` removes only
    those whose writer is provably gone: a process of this machine that is no
    longer running, or this process when it is not writing it; one whose
    writer cannot be checked (another host or container, or no owner in its
    name) only when nothing in it changed for `stale_secs`.

    Example:
        ```python
        files = ExportFileManager("/m/export/latest", keep=5)
        path = files.path_for(1200)         # "/m/export/latest/1200"
        files.write(path, lambda tmp: tf.saved_model.save(model, tmp))
        files.garbage_collect()
        ```
    """

    def __init__(self, base_dir: str, keep: int | None = None,
                 stale_secs: float = STALE_EXPORT_SECS) -> None:
        self.base_dir = base_dir.rstrip("/")
        self.keep = keep
        self.stale_secs = stale_secs

    def path_for(self, number: int) -> str:
        return f"{self.base_dir}/{int(number)}"

    def _numbered(self) -> list[str]:
        import tensorflow as tf

        if not tf.io.gfile.isdir(self.base_dir):
            return []
        names = [name.rstrip("/") for name in tf.io.gfile.listdir(self.base_dir)]
        return [self.path_for(number)
                for number in sorted(int(name) for name in names if name.isdigit())]

    def exports(self) -> list[str]:
        """Finished (whole) exports, oldest (smallest number) first."""
        return [path for path in self._numbered() if is_whole(path)]

    def write(self, path: str, save: Any) -> bool:
        """Calls `save(tmp_dir)` and publishes the result as `path`.

        Returns False, writing nothing, when a whole export exists at `path`.
        A partial one (a publication to object storage cut short) is replaced.
        """
        import tensorflow as tf

        if tf.io.gfile.exists(path):
            if is_whole(path):
                return False
            logger.warning("Replacing %s: a partial export (no %s: its publication was cut "
                           "short)", path, SAVED_MODEL_FILES[0])
            tf.io.gfile.rmtree(path)
        self.remove_interrupted()
        number = path.rsplit("/", 1)[-1]
        tmp = (f"{self.base_dir}/{_TMP_PREFIX}{number}-{uuid.uuid4().hex}-"
               f"{Owner.current().tag()}")
        tf.io.gfile.makedirs(self.base_dir)
        with _WRITING_LOCK:
            _WRITING.add(tmp)
        try:
            save(tmp)
            publish(tmp, path)
        finally:
            with _WRITING_LOCK:
                _WRITING.discard(tmp)
            if tf.io.gfile.exists(tmp):
                tf.io.gfile.rmtree(tmp)
        return True

    def remove_partial(self) -> list[str]:
        """Removes numbered exports that are not whole (a publication to object
        storage cut short); returns what it removed. Only the one writer of this
        directory (the evaluator holding the lease) may call it."""
        import tensorflow as tf

        removed = []
        for path in self._numbered():
            if not is_whole(path):
                logger.warning("Removing %s: a partial export (its publication was cut "
                               "short)", path)
                tf.io.gfile.rmtree(path)
                removed.append(path)
        return removed

    def remove_interrupted(self) -> list[str]:
        """Removes temporary directories of exports whose writer is provably gone
        (see the class doc); returns what it removed."""
        import tensorflow as tf

        if not tf.io.gfile.isdir(self.base_dir):
            return []
        removed = []
        fs_now = None
        for name in tf.io.gfile.listdir(self.base_dir):
            name = name.rstrip("/")
            if not name.startswith(_TMP_PREFIX):
                continue
            path = f"{self.base_dir}/{name}"
            verdict, why = _writer_of(path, name)
            if verdict == _AGE_DECIDES:
                if fs_now is None:
                    fs_now = file_system_now(self.base_dir)
                age = fs_now - _newest_mtime(path)
                if age < self.stale_secs:
                    logger.debug("Leaving %s: %s, and it changed %.0fs ago", path, why, age)
                    continue
                why = (f"{why}, and nothing in it changed for {age:.0f}s (more than "
                       f"{self.stale_secs:.0f}s)")
            elif verdict == ALIVE:
                continue
            logger.info("Removing interrupted export %s: %s", path, why)
            try:
                tf.io.gfile.rmtree(path)
            except tf.errors.NotFoundError:
                continue
            removed.append(path)
        return removed

    def garbage_collect(self) -> list[str]:
        """Removes all but the newest `keep` exports; returns what it removed."""
        import tensorflow as tf

        if self.keep is None:
            return []
        exports = self.exports()
        removed = exports[:max(0, len(exports) - self.keep)]
        for path in removed:
            logger.info("Removing old export %s (keeping the newest %s)", path, self.keep)
            tf.io.gfile.rmtree(path)
        return removed


_AGE_DECIDES = "age decides"

# A SavedModel's graph: a loader needs it, so it is published last.
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")


# Published last on object storage by an export that holds no SavedModel.
PUBLISHED_MARKER = ".published"


def is_whole(export_dir: str) -> bool:
    """Whether `export_dir` holds a whole export: its `saved_model.pb` (published
    last) is there. An export holding no SavedModel (a `save` that writes other
    files) is whole on a file system once it is there (renamed into place), on
    object storage once its `.published` marker (copied last) is."""
    import tensorflow as tf

    try:
        names = [name.rstrip("/") for name in tf.io.gfile.listdir(export_dir)]
    except tf.errors.OpError:
        return False
    if any(name in SAVED_MODEL_FILES or name == PUBLISHED_MARKER for name in names):
        return True
    return "://" not in export_dir and bool(names)


def publish(tmp: str, path: str) -> None:
    """Makes the export in `tmp` visible as `path`, never half of it (module doc)."""
    import tensorflow as tf

    if "://" not in path:
        tf.io.gfile.rename(tmp, path, overwrite=False)  # one atomic rename
        return
    files: list[str] = []
    for root, _, names in tf.io.gfile.walk(tmp):
        files.extend(f"{root.rstrip('/')}/{name}" for name in names)
    if not files:
        raise FileNotFoundError(f"the export in {tmp} holds no file: nothing to publish")
    last = [f for f in files if f.rsplit("/", 1)[-1] in SAVED_MODEL_FILES
            and f.rsplit("/", 1)[0].rstrip("/") == tmp.rstrip("/")]
    for source in [f for f in files if f not in last] + last:
        target = path + source[len(tmp.rstrip("/")):]
        tf.io.gfile.makedirs(target.rsplit("/", 1)[0])
        tf.io.gfile.copy(source, target, overwrite=True)
    if not last:
        with tf.io.gfile.GFile(f"{path}/{PUBLISHED_MARKER}", "w") as f:
            f.write("")


def _writer_of(path: str, name: str) -> tuple[str, str]:
    """Whether the writer of temporary directory `name` is ALIVE, GONE, or
    unknown (_AGE_DECIDES), and why."""
    with _WRITING_LOCK:
        if path in _WRITING:
            return ALIVE, "this process is writing it"
    match = _TMP_NAME.match(name)
    owner = Owner.from_tag(match.group("owner")) if match and match.group("owner") else None
    if owner is None:
        return _AGE_DECIDES, "its writer is not recorded"
    if owner.is_this_process():
        return GONE, "this process wrote it and is not writing it any more"
    status, why = owner.status()
    return (_AGE_DECIDES if status not in (ALIVE, GONE) else status), why


def _newest_mtime(directory: str) -> float:
    """The newest modification time (seconds) of `directory` and the files in it."""
    import tensorflow as tf

    newest = 0.0
    try:
        newest = mtime_nsec(directory) / 1e9
    except OSError:
        pass
    try:
        for root, _, files in tf.io.gfile.walk(directory):
            for name in files:
                try:
                    newest = max(newest, mtime_nsec(f"{root}/{name}") / 1e9)
                except OSError:
                    continue
    except tf.errors.OpError:
        pass
    return newest
