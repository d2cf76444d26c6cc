"""trainexec.estimator's exporters: tf.estimator's argument checks and words, old
exports collected as tf.estimator collected them (every integer-named directory is a
version, the largest the newest), and BestExporter exporting only improvements. A
hand-written estimator stands in for the export itself (a real one:
test_estimator_engine_estimator.py)."""

import os
import re

import pytest

import trainexec.estimator as te
from trainexec.estimator_engine.exporters import BEST_FILE, garbage_collect_exports

pytestmark = pytest.mark.tf_line


class ExportingEstimator:
    """Writes `<export_dir_base>/<n>` for the n-th export, as export_saved_model would."""

    def __init__(self, first=100):
        self.calls, self._next = [], first

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None):
        self.calls.append(dict(export_dir_base=export_dir_base, assets_extra=assets_extra,
                               as_text=as_text, checkpoint_path=checkpoint_path))
        path = os.path.join(export_dir_base, str(self._next))
        os.makedirs(path)
        with open(os.path.join(path, "saved_model.pb"), "w") as f:
            f.write("graph")
        self._next += 1
        return path.encode()


def receiver_fn():
    raise AssertionError("not called: the estimator stands in for the export")


ROWS = [
    (lambda: te.LatestExporter("latest", receiver_fn, exports_to_keep=0),
     "`exports_to_keep`, if provided, must be a positive number. Got 0", "integer > 0"),
    (lambda: te.BestExporter("best", receiver_fn, exports_to_keep=-3),
     "must be a positive number. Got -3", "or None to keep every export"),
    (lambda: te.LatestExporter("latest", receiver_fn, exports_to_keep=2.5),
     "must be a positive number", "exporter 'latest'"),
    (lambda: te.BestExporter("best", receiver_fn, compare_fn=None),
     "`compare_fn` must not be None", "def compare_fn"),
    (lambda: te.BestExporter("best", receiver_fn, compare_fn=lambda a, b: True),
     "must include best_eval_result argument", "def compare_fn"),
    (lambda: te.BestExporter("best", receiver_fn,
                             compare_fn=lambda best_eval_result, now: True),
     "must include current_eval_result argument", "BestExporter 'best'"),
    (lambda: te.BestExporter("best", receiver_fn, compare_fn=lambda best_eval_result,
                             current_eval_result, margin: True),
     "has following not expected args: .'margin'.", "with best_eval_result and"),
    (lambda: te.FinalExporter("final", "not a function"), "must be callable", "'final'"),
]


@pytest.mark.parametrize("build, words, guidance", ROWS)
def test_bad_exporter_rows(build, words, guidance):
    with pytest.raises((ValueError, TypeError), match=words) as raised:
        build()
    assert re.search(guidance, str(raised.value)), str(raised.value)


def test_the_export_gets_the_exporters_arguments(tmp_path):
    estimator = ExportingEstimator()
    exporter = te.LatestExporter("latest", receiver_fn, assets_extra={"a": "/b"},
                                 as_text=True)
    path = exporter.export(estimator, str(tmp_path), "/m/model.ckpt-5", {}, False)
    assert path == str(tmp_path / "100").encode()
    assert estimator.calls == [dict(export_dir_base=str(tmp_path), assets_extra={"a": "/b"},
                                    as_text=True, checkpoint_path="/m/model.ckpt-5")]
    final = te.FinalExporter("final", receiver_fn)
    assert final.export(estimator, str(tmp_path), "/m/model.ckpt-5", {}, False) is None
    assert final.export(estimator, str(tmp_path), "/m/model.ckpt-5", {}, True) is not None


def test_old_exports_are_collected_by_number_as_tf_estimator_did(tmp_path):
    for name in ("1700000001", "1700000003", "1700000002", "9"):  # 9: the oldest
        (tmp_path / name).mkdir()  # empty: still an export version, as TF Serving sees it
    (tmp_path / "best.json").write_text("{}")
    (tmp_path / ".tmp-5-unfinished").mkdir()
    (tmp_path / "1700000004").write_text("a file, not an export")
    te.LatestExporter("latest", receiver_fn, exports_to_keep=2).export(
        ExportingEstimator(first=1700000005), str(tmp_path), None, None, False)
    assert sorted(os.listdir(tmp_path)) == [".tmp-5-unfinished", "1700000003", "1700000004",
                                            "1700000005", "best.json"]
    assert garbage_collect_exports(str(tmp_path / "missing"), 1) == []


def test_best_exporter_exports_improvements_only_and_remembers_the_best(tmp_path):
    estimator = ExportingEstimator()
    best = te.BestExporter("best", receiver_fn, exports_to_keep=2)
    results = [best.export(estimator, str(tmp_path), "ckpt", {"loss": loss}, False)
               for loss in (0.5, 0.6, 0.4)]
    assert [r is not None for r in results] == [True, False, True]
    assert sorted(os.listdir(tmp_path)) == ["100", "101", BEST_FILE]
    assert best.best_eval_result(str(tmp_path)) == {"loss": 0.4}
    restarted = te.BestExporter("best", receiver_fn)  # a restarted evaluator's
    assert restarted.export(estimator, str(tmp_path), "ckpt", {"loss": 0.45}, False) is None
    with pytest.raises(ValueError, match="current_eval_result cannot be empty or no loss"):
        restarted.export(estimator, str(tmp_path), "ckpt", {"accuracy": 0.9}, False)


def test_best_exporter_without_an_evaluation_exports_and_records_nothing(tmp_path):
    estimator = ExportingEstimator()
    best = te.BestExporter("best", receiver_fn, exports_to_keep=1)
    assert best.export(estimator, str(tmp_path), None, None, False) is not None
    assert os.listdir(tmp_path) == ["100"] and best.best_eval_result(str(tmp_path)) is None
