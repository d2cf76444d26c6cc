"""Exporters on a real tiny Keras model: SavedModels that load and predict like the
exported model, never overwritten, garbage collection, and a best value that survives
a restart. (The export file manager's own tests: test_evaluation_export_files.py; the name
rules: test_exporter_protocol.py.)"""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from sidecar_programs import toy
from test_evaluation_export_files import dead_pid, temp_dir_of
from test_exporter_protocol import BAD_NAMES
from trainexec.errors import ConfigError
from trainexec.evaluation.export_files import ExportFileManager
from trainexec.keras.evaluate.exporters import (BEST_FILE, BestExporter, FinalExporter,
                                                LatestExporter)
from trainexec.records.liveness import Owner

pytestmark = [pytest.mark.keras, pytest.mark.tf_line]

X, _ = toy.arrays(16, seed=3)


@pytest.fixture(scope="module")
def model():
    model = toy.build_model()
    toy.set_quality(model, 0.5)
    return model


def export(exporter, estimator, base, step, final=False, checkpoint="/ckpts/ckpt-1", **metrics):
    return exporter.export(estimator=estimator, export_path=str(base),
                           checkpoint_path=checkpoint,
                           eval_result={"global_step": step, **metrics},
                           is_the_final_export=final)


def predict(path):
    return toy.serve(path, X)


def test_latest_exporter_keeps_newest_and_exports_load(tmp_path, model):
    exporter = LatestExporter(keep=2)
    paths = [export(exporter, model, tmp_path, step, loss=1.0) for step in (8, 16, 24)]
    assert paths == [str(tmp_path / s) for s in ("8", "16", "24")]
    assert sorted(os.listdir(tmp_path)) == ["16", "24"]  # oldest removed, no leftovers
    np.testing.assert_allclose(predict(paths[-1]), model(X).numpy(), rtol=1e-6)


def test_export_asks_subject_for_the_evaluated_checkpoint(tmp_path, model):
    class Subject:
        def __init__(self):
            self.asked = []

        def model_at(self, checkpoint_path):
            self.asked.append(checkpoint_path)
            return model

    subject = Subject()
    path = export(FinalExporter(), subject, tmp_path, 40, final=True,
                  checkpoint="/ckpts/ckpt-5")
    assert subject.asked == ["/ckpts/ckpt-5"] and path == str(tmp_path / "40")
    assert "serving_default" in tf.saved_model.load(path).signatures


def test_existing_export_is_never_overwritten(tmp_path, model):
    (tmp_path / "8").mkdir()
    (tmp_path / "8" / "marker").write_text("earlier export")
    path = export(LatestExporter(), model, tmp_path, 8, loss=1.0)
    assert path == str(tmp_path / "8")
    assert os.listdir(path) == ["marker"]


def test_interrupted_export_is_not_an_export_and_is_cleaned_up(tmp_path, model):
    # A killed export's leftovers: its writer, on this machine, is gone.
    temp_dir_of(tmp_path, dataclasses.replace(Owner.current(), pid=dead_pid(), started=None))
    files = ExportFileManager(str(tmp_path), keep=5)
    assert files.exports() == []
    export(LatestExporter(), model, tmp_path, 16, loss=1.0)
    assert sorted(os.listdir(tmp_path)) == ["16"]


def test_export_name_falls_back_to_a_timestamp(tmp_path, model):
    path = LatestExporter().export(model, str(tmp_path), "/c/ckpt-1", {"loss": 1.0}, False)
    assert os.path.basename(path).isdigit() and int(os.path.basename(path)) > 1.6e9


def test_final_exporter_only_exports_the_final_checkpoint(tmp_path, model):
    exporter = FinalExporter()
    assert export(exporter, model, tmp_path, 8) is None
    assert not tmp_path.joinpath("8").exists()
    assert export(exporter, model, tmp_path, 16, final=True) == str(tmp_path / "16")


@pytest.mark.parametrize("mode,values,exported", [
    ("min", [0.5, 0.7, 0.3, 0.3], [True, False, True, False]),
    ("max", [0.5, 0.7, 0.3, float("nan")], [True, True, False, False]),
])
def test_best_exporter_exports_improvements_only(tmp_path, model, mode, values, exported):
    exporter = BestExporter(metric="auc", mode=mode)
    got = [export(exporter, model, tmp_path, 8 * (i + 1), auc=v) is not None
           for i, v in enumerate(values)]
    assert got == exported
    best = json.loads((tmp_path / BEST_FILE).read_text())
    assert best["value"] == (0.3 if mode == "min" else 0.7)


def test_best_survives_a_restart(tmp_path, model):
    export(BestExporter(metric="loss"), model, tmp_path, 8, loss=0.2)
    restarted = BestExporter(metric="loss")  # a new process: nothing in memory
    assert export(restarted, model, tmp_path, 16, loss=0.4) is None
    assert sorted(os.listdir(tmp_path)) == ["8", BEST_FILE]
    assert export(restarted, model, tmp_path, 24, loss=0.1) == str(tmp_path / "24")
    assert json.loads((tmp_path / BEST_FILE).read_text())["global_step"] == 24


def test_best_record_of_another_metric_is_refused(tmp_path, model):
    export(BestExporter(metric="loss"), model, tmp_path, 8, loss=0.2, auc=0.9)
    with pytest.raises(ConfigError, match="records the best min 'loss'.*another name"):
        export(BestExporter(metric="auc", mode="max"), model, tmp_path, 16, loss=0.1,
               auc=0.95)


def test_best_metric_missing_from_results(tmp_path, model):
    with pytest.raises(ConfigError, match="'auc', which the evaluation did not return; "
                                          "available: global_step, loss"):
        export(BestExporter(metric="auc", mode="max"), model, tmp_path, 8, loss=0.2)


def test_unexportable_subject(tmp_path):
    with pytest.raises(TypeError, match="needs a tf.keras.Model, a tf.Module"):
        export(LatestExporter(), object(), tmp_path, 8)


@pytest.mark.parametrize("name,words", BAD_NAMES)
@pytest.mark.parametrize("make", [lambda n: LatestExporter(name=n),
                                  lambda n: BestExporter(name=n),
                                  lambda n: FinalExporter(name=n)],
                         ids=["latest", "best", "final"])
def test_bad_exporter_names_are_refused_with_the_fix(make, name, words):
    with pytest.raises(ConfigError) as info:
        make(name)
    assert words in str(info.value)
    assert "e.g. 'best'" in str(info.value)  # the fix
    assert isinstance(info.value, ValueError)  # what tf.estimator's EvalSpec raises


@pytest.mark.parametrize("make,words", [
    (lambda: LatestExporter(name=""), "`name` ('') must be a non-empty string"),
    (lambda: LatestExporter(name="a/b"), "without '/'"),
    (lambda: LatestExporter(keep=0), "`keep` (0) of exporter 'latest' must be a positive"),
    (lambda: BestExporter(mode="lowest"), "`mode` ('lowest') of BestExporter 'best' must "
                                          "be 'min'"),
    (lambda: BestExporter(metric=""), "`metric` ('') of BestExporter 'best' must be"),
])
def test_bad_arguments(make, words):
    with pytest.raises(ConfigError) as info:
        make()
    assert words in str(info.value)
