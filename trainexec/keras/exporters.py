"""Exporters for Keras and custom-loop models, called by the evaluation engine.

Each exporter has a `name` (its exports go to `<model_dir>/export/<name>/`, or
`<state_dir>/export/<name>/` for a `SidecarEvaluator` with a `state_dir` of its
own) and `export(estimator, export_path, checkpoint_path, eval_result,
is_the_final_export)`, the call `trainexec.evaluation.one_pass.Evaluator` makes after an
evaluation. `estimator` is the target's export subject: a `tf.keras.Model` or
`tf.Module` to save as it is, or an object with `model_at(checkpoint_path)`
returning the model with that checkpoint's weights (what `SidecarEvaluator`
passes).

An export is a SavedModel written under a temporary name in the same directory
and renamed to `<export_path>/<global_step>` (a timestamp when the metrics have
no step), so readers never see half of one. An existing export directory is
never overwritten. Naming and garbage collection live in `ExportFileManager`,
apart from the export call. `check_exporter_name` is the one check of an
exporter's name, used by these exporters, `SidecarEvaluator` and `EvalSpec`.

Example::

    exporters = [LatestExporter(keep=3), BestExporter(metric="auc", mode="max"),
                 FinalExporter()]
    SidecarEvaluator(model, data, checkpoint_dir, exporters=exporters).start()
    loaded = tf.saved_model.load(f"{checkpoint_dir}/export/best/1200")
    predictions = loaded.serve(x)   # Keras 3 (model.export); Keras 2: loaded(x)
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import threading
import time
import uuid
from typing import Any, Mapping

from trainexec.records import file_system_now, read_json_file, write_json_record
from trainexec.records import record_path as model_dir_path
from trainexec.errors import ConfigError
from trainexec.evaluation.target import GLOBAL_STEP
from trainexec.liveness import ALIVE, GONE, Owner

__all__ = [
    "BEST_FILE",
    "BestExporter",
    "BestValue",
    "ExportFileManager",
    "Exporter",
    "FinalExporter",
    "LatestExporter",
    "check_exporter_name",
]

logger = logging.getLogger(__name__)

BEST_FILE = "best.json"
_TMP_PREFIX = ".tmp-"
# `.tmp-<number>-<uuid>-<owner tag>`; before owners were recorded, `.tmp-<number>-<uuid>`.
_TMP_NAME = re.compile(r"^\.tmp-\d+-[0-9a-f]{32}(?:-(?P<owner>.+))?$")
STALE_EXPORT_SECS = 3600.0

_WRITING: set[str] = set()  # temporary directories this process is writing now
_WRITING_LOCK = threading.Lock()


def check_exporter_name(name: Any) -> str:
    """Returns `name` if it can name an export directory; raises ConfigError if not.

    An exporter's name becomes one directory, `<model_dir>/export/<name>`: it
    must be a non-empty string that is a single directory name, not "." or
    "..", without "/", "\\", NUL or other control characters, and without
    surrounding spaces. ConfigError is a ValueError, as tf.estimator raises.
    """
    fix = "e.g. 'best' or 'final_v2' (it names the directory <model_dir>/export/<name>)"
    if name is None or (isinstance(name, str) and not name):
        raise ConfigError(
            "An Exporter cannot have a name that is `None` or empty: exporter `name` "
            f"({name!r}) must be a non-empty string, {fix}")
    if not isinstance(name, str):
        raise ConfigError(
            f"An Exporter must have a string name: exporter `name` ({name!r}) is of type "
            f"{type(name).__name__}; use a string, {fix}")
    if name in (".", ".."):
        problem = ("is '.', the export directory itself" if name == "." else
                   "is '..', the parent of the export directory")
    elif "/" in name or "\\" in name:
        problem = "contains a path separator"
    elif "\x00" in name:
        problem = "contains a NUL character"
    elif any(ord(c) < 32 or ord(c) == 127 for c in name):
        problem = "contains a control character"
    elif name != name.strip():
        problem = "has surrounding spaces"
    else:
        return name
    raise ConfigError(
        f"exporter `name` ({name!r}) must be a single directory name (without '/', "
        f"'\\', NUL or control characters, not '.' or '..', no surrounding spaces), but "
        f"it {problem}; {fix}")


class ExportFileManager:
    """Names exports `<base_dir>/<number>` and removes the oldest beyond `keep`.

    Only directories named by an integer count as exports; `best.json` and
    temporary directories of exports being written (or interrupted) are not
    exports. A temporary directory's name carries its writer (see
    `trainexec.liveness.Owner`), so that `remove_interrupted` removes only
    those whose writer is provably gone: a process of this machine that is no
    longer running, or this process when it is not writing it; one whose
    writer cannot be checked (another host or container, or no owner in its
    name) only when nothing in it changed for `stale_secs`.

    Example::

        files = ExportFileManager("/m/export/latest", keep=5)
        path = files.path_for(1200)         # "/m/export/latest/1200"
        files.write(path, lambda tmp: tf.saved_model.save(model, tmp))
        files.garbage_collect()
    """

    def __init__(self, base_dir: str, keep: int | None = None,
                 stale_secs: float = STALE_EXPORT_SECS) -> None:
        self.base_dir = base_dir.rstrip("/")
        self.keep = keep
        self.stale_secs = stale_secs

    def path_for(self, number: int) -> str:
        return f"{self.base_dir}/{int(number)}"

    def exports(self) -> list[str]:
        """Finished exports, oldest (smallest number) first."""
        import tensorflow as tf

        if not tf.io.gfile.isdir(self.base_dir):
            return []
        names = [name.rstrip("/") for name in tf.io.gfile.listdir(self.base_dir)]
        numbers = sorted(int(name) for name in names if name.isdigit())
        return [self.path_for(number) for number in numbers]

    def write(self, path: str, save: Any) -> bool:
        """Calls `save(tmp_dir)` and renames the result to `path`.

        Returns False, writing nothing, when `path` already exists.
        """
        import tensorflow as tf

        if tf.io.gfile.exists(path):
            return False
        self.remove_interrupted()
        number = path.rsplit("/", 1)[-1]
        tmp = (f"{self.base_dir}/{_TMP_PREFIX}{number}-{uuid.uuid4().hex}-"
               f"{Owner.current().tag()}")
        tf.io.gfile.makedirs(self.base_dir)
        with _WRITING_LOCK:
            _WRITING.add(tmp)
        try:
            save(tmp)
            tf.io.gfile.rename(tmp, path, overwrite=False)
        finally:
            with _WRITING_LOCK:
                _WRITING.discard(tmp)
            if tf.io.gfile.exists(tmp):
                tf.io.gfile.rmtree(tmp)
        return True

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
        newest = tf.io.gfile.stat(directory).mtime_nsec / 1e9
    except tf.errors.OpError:
        pass
    try:
        for root, _, files in tf.io.gfile.walk(directory):
            for name in files:
                try:
                    newest = max(newest, tf.io.gfile.stat(f"{root}/{name}").mtime_nsec / 1e9)
                except tf.errors.OpError:
                    continue
    except tf.errors.OpError:
        pass
    return newest


class Exporter:
    """Base class: validates the name, resolves the model and writes exports.

    Subclasses implement `export` and use `_write` for the SavedModel.
    """

    def __init__(self, name: str, keep: int | None = None) -> None:
        check_exporter_name(name)
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int)
                                 or keep < 1):
            raise ConfigError(
                f"`keep` ({keep!r}) of exporter {name!r} must be a positive integer, "
                "or None to keep every export")
        self._name = name
        self._keep = keep

    @property
    def name(self) -> str:
        return self._name

    def export(self, estimator: Any, export_path: str, checkpoint_path: str,
               eval_result: Mapping[str, Any], is_the_final_export: bool) -> str | None:
        """Exports (or not); returns the export directory, or None."""
        raise NotImplementedError

    def _write(self, estimator: Any, export_path: str, checkpoint_path: str,
               eval_result: Mapping[str, Any]) -> str:
        files = ExportFileManager(export_path, self._keep)
        step = eval_result.get(GLOBAL_STEP)
        path = files.path_for(int(step) if step is not None else int(time.time()))
        model = _model_to_save(estimator, checkpoint_path, self._name)
        if files.write(path, lambda tmp: _save(model, tmp)):
            logger.info("Exporter %s wrote %s from %s", self._name, path, checkpoint_path)
        else:
            logger.info("Exporter %s: %s already exists; not overwriting it",
                        self._name, path)
        files.garbage_collect()
        return path


class LatestExporter(Exporter):
    """Exports after every evaluation and keeps the newest `keep` exports.

    Example::

        LatestExporter(name="latest", keep=5)
    """

    def __init__(self, name: str = "latest", keep: int | None = 5) -> None:
        super().__init__(name, keep)

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        del is_the_final_export
        return self._write(estimator, export_path, checkpoint_path, eval_result)


class FinalExporter(Exporter):
    """Exports once, for the last checkpoint of the run.

    Example::

        FinalExporter(name="final")
    """

    def __init__(self, name: str = "final") -> None:
        super().__init__(name, None)

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        if not is_the_final_export:
            return None
        return self._write(estimator, export_path, checkpoint_path, eval_result)


@dataclasses.dataclass(frozen=True)
class BestValue:
    """The best metric value so far, as kept in `<export_path>/best.json`."""

    metric: str
    mode: str
    value: float
    global_step: int | None
    checkpoint: str
    export: str


class BestExporter(Exporter):
    """Exports when `metric` is better than every earlier evaluation's.

    The best value is kept in `<export_path>/best.json` (written atomically after
    the export), so an evaluator that restarts compares against it instead of
    exporting whatever it sees first. NaN is never better.

    Example::

        BestExporter(name="best", metric="loss", mode="min")
    """

    def __init__(self, name: str = "best", metric: str = "loss", mode: str = "min",
                 keep: int | None = 5) -> None:
        super().__init__(name, keep)
        if not isinstance(metric, str) or not metric:
            raise ConfigError(
                f"`metric` ({metric!r}) of BestExporter {name!r} must be the name of an "
                "evaluation metric, e.g. 'loss'")
        if mode not in ("min", "max"):
            raise ConfigError(
                f"`mode` ({mode!r}) of BestExporter {name!r} must be 'min' (lower is "
                "better, e.g. loss) or 'max' (higher is better, e.g. accuracy)")
        self.metric = metric
        self.mode = mode

    def best(self, export_path: str) -> BestValue | None:
        """The recorded best value under `export_path`, or None."""
        path = model_dir_path(export_path, BEST_FILE)
        try:
            data = read_json_file(path)
            if data is None:
                return None
            best = BestValue(**data)
        except (ValueError, TypeError) as err:
            raise ConfigError(
                f"{path} is not a best-export record ({err}); delete it to start "
                "comparing afresh") from err
        if (best.metric, best.mode) != (self.metric, self.mode):
            raise ConfigError(
                f"{path} records the best {best.mode} {best.metric!r}, but BestExporter "
                f"{self.name!r} compares {self.mode} {self.metric!r}; give the exporter "
                "another name or delete the file")
        return best

    def is_better(self, value: float, best: BestValue | None) -> bool:
        if math.isnan(value):
            return False
        if best is None:
            return True
        return value < best.value if self.mode == "min" else value > best.value

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        del is_the_final_export
        if self.metric not in eval_result:
            raise ConfigError(
                f"BestExporter {self.name!r} compares `metric` {self.metric!r}, which the "
                f"evaluation did not return; available: {', '.join(sorted(eval_result))}")
        value = float(eval_result[self.metric])
        best = self.best(export_path)
        if not self.is_better(value, best):
            logger.info("Exporter %s: %s = %s is not better than %s (step %s); not "
                        "exporting", self.name, self.metric, value, best and best.value,
                        best and best.global_step)
            return None
        path = self._write(estimator, export_path, checkpoint_path, eval_result)
        step = eval_result.get(GLOBAL_STEP)
        record = BestValue(self.metric, self.mode, value,
                           None if step is None else int(step), checkpoint_path, path)
        write_json_record(model_dir_path(export_path, BEST_FILE), record)
        return path


def _model_to_save(estimator: Any, checkpoint_path: str, name: str) -> Any:
    import tensorflow as tf

    if hasattr(estimator, "model_at"):
        return estimator.model_at(checkpoint_path)
    if isinstance(estimator, tf.Module) or _is_keras3_model(estimator):
        return estimator
    raise TypeError(
        f"exporter {name!r} got {type(estimator).__name__} to export; it needs a "
        "tf.keras.Model, a tf.Module, or an object with model_at(checkpoint_path)")


def _is_keras3_model(model: Any) -> bool:
    """A Keras 3 model (not a tf.Module; saved with `model.export`)."""
    import sys

    keras = sys.modules.get("keras")  # loaded by whoever built the model
    version = getattr(keras, "__version__", "0")
    return (keras is not None and int(version.split(".")[0]) >= 3
            and isinstance(model, keras.Model))


def _save(model: Any, directory: str) -> None:
    """Writes a servable SavedModel of `model` to `directory`.

    Keras 3: `model.export` (call `loaded.serve(x)` after
    `tf.saved_model.load`); Keras 2 (tf.keras 2.15, tf_keras):
    `model.save(save_format="tf")` (call `loaded(x)` or
    `loaded.signatures["serving_default"]`); other `tf.Module`s:
    `tf.saved_model.save`.
    """
    import tensorflow as tf

    if _is_keras3_model(model):
        model.export(directory, format="tf_saved_model", verbose=False)
    elif isinstance(model, tf.keras.Model):
        model.save(directory, save_format="tf", include_optimizer=False)
    else:
        tf.saved_model.save(model, directory)
