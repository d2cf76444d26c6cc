"""SavedModel exporters for Keras and custom-loop models: latest, best, final.

Each exporter follows `trainexec.exporter_protocol.ExporterProtocol`: a
`name` (its exports go to `<model_dir>/export/<name>/`, or
`<state_dir>/export/<name>/` for a `SidecarEvaluator` with a `state_dir` of its
own) and `export(estimator, export_path, checkpoint_path, eval_result,
is_the_final_export)`, the call `trainexec.evaluation.one_pass.Evaluator` makes after an
evaluation. `estimator` is the target's export subject: a `tf.keras.Model` or
`tf.Module` to save as it is, or an object with `model_at(checkpoint_path)`
returning the model with that checkpoint's weights (what `SidecarEvaluator`
passes).

This module owns what is Keras here: which model to save and how (Keras 3
`model.export`, Keras 2 `model.save`, else `tf.saved_model.save`), when each
exporter exports, and `BestExporter`'s `best.json`. Where an export goes
(numbered directories, written under a temporary name and renamed, never
overwritten, old ones garbage-collected) is
`trainexec.evaluation.export_files.ExportFileManager`'s; the name rules are
`trainexec.exporter_protocol.check_exporter_name`'s.

Example:
    ```python
    exporters = [LatestExporter(keep=3), BestExporter(metric="auc", mode="max"),
                 FinalExporter()]
    SidecarEvaluator(model, data, checkpoint_dir, exporters=exporters).start()
    loaded = tf.saved_model.load(f"{checkpoint_dir}/export/best/1200")
    predictions = loaded.serve(x)   # Keras 3 (model.export); Keras 2: loaded(x)
    ```
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import Any, Mapping

from trainexec.records.layout import read_json_file, record_path, write_json_record
from trainexec.errors import ConfigError
from trainexec.evaluation.export_files import ExportFileManager
from trainexec.exporter_protocol import check_exporter_name
from trainexec.evaluation.target import GLOBAL_STEP

__all__ = [
    "BEST_FILE",
    "BestExporter",
    "BestValue",
    "Exporter",
    "FinalExporter",
    "LatestExporter",
]

logger = logging.getLogger(__name__)

BEST_FILE = "best.json"


class Exporter:
    """Base class: validates the name, resolves the model and writes exports.

    Subclasses implement `export` and use `_write` for the SavedModel.
    """

    # Every export is written aside and published whole (ExportFileManager), on
    # object storage too: no staging needed (trainexec.evaluation.staged_export).
    publishes_whole_exports = True

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

    Example:
        ```python
        LatestExporter(name="latest", keep=5)
        ```
    """

    def __init__(self, name: str = "latest", keep: int | None = 5) -> None:
        super().__init__(name, keep)

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        del is_the_final_export
        return self._write(estimator, export_path, checkpoint_path, eval_result)


class FinalExporter(Exporter):
    """Exports once, for the last checkpoint of the run.

    Example:
        ```python
        FinalExporter(name="final")
        ```
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

    Example:
        ```python
        BestExporter(name="best", metric="loss", mode="min")
        ```
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
        path = record_path(export_path, BEST_FILE)
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
        write_json_record(record_path(export_path, BEST_FILE), record)
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
