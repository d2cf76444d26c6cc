"""tf.estimator's exporters for `trainexec.estimator.Estimator`: `LatestExporter`,
`BestExporter`, `FinalExporter`, with tf.estimator's arguments.

The evaluation engine calls `export(estimator, export_path, checkpoint_path,
eval_result, is_the_final_export)` after an evaluation (`export_path` is
`<model_dir>/export/<name>`); each writes `estimator.export_saved_model` there, which
publishes whole `<timestamp>` directories, and keeps the newest `exports_to_keep`: as
tf.estimator did, every directory of `export_path` named by an integer is an export
version (as TF Serving reads them), the largest numbers the newest (on object storage,
only whole ones: a publication cut short is neither kept nor counted).
`BestExporter` keeps the best evaluation so far in `<export_path>/best.json` (written
atomically after the export), so that a restarted evaluator compares against it.

Example:
    ```python
    exporters = [FinalExporter("final", serving_input_receiver_fn),
                 BestExporter("best", serving_input_receiver_fn, exports_to_keep=3)]
    ```
"""

from __future__ import annotations

import logging
import math
from typing import Any, Callable, Mapping, Protocol

from trainexec.estimator_engine.calls import fn_args
from trainexec.evaluation.export_files import ExportFileManager
from trainexec.exporter_protocol import check_exporter_name
from trainexec.records.layout import read_json_file, record_path, write_json

__all__ = ["BEST_FILE", "BestExporter", "FinalExporter", "LatestExporter",
           "garbage_collect_exports", "loss_smaller"]

logger = logging.getLogger(__name__)

BEST_FILE = "best.json"


def loss_smaller(best_eval_result: Mapping[str, Any],
                 current_eval_result: Mapping[str, Any] | None) -> bool:
    """BestExporter's default: the current evaluation is better when its `loss` is
    smaller."""
    for which, result in (("best_eval_result", best_eval_result),
                          ("current_eval_result", current_eval_result)):
        if not result or "loss" not in result:
            raise ValueError(f"{which} cannot be empty or no loss is found in it: "
                             "BestExporter's default compare_fn compares `loss`; give a "
                             "compare_fn of your own for evaluations without it")
    assert current_eval_result is not None  # checked in the loop
    return current_eval_result["loss"] < best_eval_result["loss"]


def _check_compare_fn(name: str, compare_fn: Any) -> None:
    """tf.estimator's rules: compare_fn(best_eval_result, current_eval_result)."""
    fix = ("def compare_fn(best_eval_result, current_eval_result): return True when the "
           "current evaluation is the better one")
    if compare_fn is None:
        raise ValueError(f"`compare_fn` must not be None. BestExporter {name!r}: {fix}")
    if not callable(compare_fn):
        raise ValueError(f"BestExporter {name!r}: `compare_fn` must be callable, "
                         f"given: {compare_fn!r}; {fix}")
    args = set(fn_args(compare_fn))
    for needed in ("best_eval_result", "current_eval_result"):
        if needed not in args:
            raise ValueError(f"compare_fn ({compare_fn!r}) must include {needed} argument. "
                             f"BestExporter {name!r}: {fix}")
    extra = sorted(args - {"best_eval_result", "current_eval_result"})
    if extra:
        raise ValueError(f"compare_fn ({compare_fn!r}) has following not expected args: "
                         f"{extra}. BestExporter {name!r} calls it with best_eval_result "
                         "and current_eval_result only")


def garbage_collect_exports(export_path: str, keep: int) -> list[str]:
    """Removes all but the `keep` largest-numbered exports of `export_path` (module
    doc); returns what it removed."""
    import tensorflow as tf

    files = ExportFileManager(export_path, keep)
    if "://" in export_path:
        return files.garbage_collect()  # whole exports only
    if not tf.io.gfile.isdir(export_path):
        return []
    names = [name.rstrip("/") for name in tf.io.gfile.listdir(export_path)]
    versions = sorted(int(name) for name in names if name.isdigit()
                      and tf.io.gfile.isdir(files.path_for(int(name))))
    removed = [files.path_for(number) for number in versions[:max(0, len(versions) - keep)]]
    for path in removed:
        logger.info("Removing old export %s (keeping the newest %s)", path, keep)
        try:
            tf.io.gfile.rmtree(path)
        except tf.errors.NotFoundError:
            continue
    return removed


class CompareFn(Protocol):
    """BestExporter's `compare_fn`: True when the current evaluation is the better."""

    def __call__(self, best_eval_result: Mapping[str, Any],
                 current_eval_result: Mapping[str, Any] | None) -> bool: ...


class _SavedModelExporter:
    """What the three share: the checks and the export itself."""

    publishes_whole_exports = True  # export_saved_model publishes whole directories

    def __init__(self, name: str, serving_input_receiver_fn: Callable | None,
                 assets_extra: Mapping[str, str] | None, as_text: bool,
                 exports_to_keep: int | None) -> None:
        check_exporter_name(name)
        if not callable(serving_input_receiver_fn):
            raise TypeError(f"exporter {name!r}: `serving_input_receiver_fn` must be "
                            f"callable, given: {serving_input_receiver_fn!r}")
        if exports_to_keep is not None and (isinstance(exports_to_keep, bool)
                                            or not isinstance(exports_to_keep, int)
                                            or exports_to_keep <= 0):
            raise ValueError(f"`exports_to_keep`, if provided, must be a positive number. Got "
                             f"{exports_to_keep!r}: exporter {name!r} keeps that many "
                             "newest exports; give an integer > 0, or None to keep every "
                             "export")
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text
        self._exports_to_keep = exports_to_keep

    @property
    def name(self) -> str:
        return self._name

    def _export(self, estimator: Any, export_path: str, checkpoint_path: str) -> bytes:
        path = estimator.export_saved_model(
            export_path, self._serving_input_receiver_fn, assets_extra=self._assets_extra,
            as_text=self._as_text, checkpoint_path=checkpoint_path)
        if self._exports_to_keep is not None:
            garbage_collect_exports(export_path, self._exports_to_keep)
        return path


class LatestExporter(_SavedModelExporter):
    """Exports after every evaluation; keeps the newest `exports_to_keep`."""

    def __init__(self, name: str, serving_input_receiver_fn: Callable | None,
                 assets_extra: Mapping[str, str] | None = None, as_text: bool = False,
                 exports_to_keep: int | None = 5) -> None:
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text,
                         exports_to_keep)

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        del eval_result, is_the_final_export
        return self._export(estimator, export_path, checkpoint_path)


class FinalExporter(_SavedModelExporter):
    """Exports once, after the final evaluation."""

    def __init__(self, name: str, serving_input_receiver_fn: Callable | None,
                 assets_extra: Mapping[str, str] | None = None, as_text: bool = False) -> None:
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text, None)

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        del eval_result
        if not is_the_final_export:
            return None
        return self._export(estimator, export_path, checkpoint_path)


class BestExporter(_SavedModelExporter):
    """Exports when `compare_fn(best_eval_result, current_eval_result)` says the current
    evaluation is better than every earlier one (default: a smaller `loss`)."""

    def __init__(self, name: str = "best_exporter",
                 serving_input_receiver_fn: Callable | None = None,
                 event_file_pattern: str | None = None,
                 compare_fn: CompareFn = loss_smaller,
                 assets_extra: Mapping[str, str] | None = None, as_text: bool = False,
                 exports_to_keep: int | None = 5) -> None:
        del event_file_pattern  # the best is kept in best.json, not re-read from events
        _check_compare_fn(name, compare_fn)
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text,
                         exports_to_keep)
        self._compare_fn = compare_fn

    def best_eval_result(self, export_path: str) -> dict | None:
        """The best evaluation recorded under `export_path`, or None."""
        path = record_path(export_path, BEST_FILE)
        data = read_json_file(path)
        if data is not None and not isinstance(data, dict):
            raise ValueError(f"{path} is not a best-export record; delete it to compare "
                             "afresh")
        return data

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        del is_the_final_export
        current = None if eval_result is None else _numbers(eval_result)
        best = self.best_eval_result(export_path)
        if best is not None and not self._compare_fn(best_eval_result=best,
                                                     current_eval_result=current):
            logger.info("Exporter %s: not better than the best so far (%s); not exporting",
                        self._name, best)
            return None
        path = self._export(estimator, export_path, checkpoint_path)
        if current is not None:  # no evaluation, nothing to compare the next one with
            write_json(record_path(export_path, BEST_FILE), current)
        return path


def _numbers(result: Mapping[str, Any]) -> dict:
    """The evaluation's scalar numbers, as JSON can keep them (NaN left out)."""
    kept = {}
    for key, value in result.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if not math.isnan(number):
            kept[key] = int(number) if key == "global_step" else number
    return kept
