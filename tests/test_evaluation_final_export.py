"""trainexec/evaluation/final_export.py on its own, beyond the restarts of
tests/test_fault_matrix_exports.py: what `final_export.json` holds and where, values that
are not JSON (bytes, numpy) recorded and given back as they were, a record matched to its
very checkpoint (a Keras file by its own time; a time recorded in whole seconds), an
unreadable record ignored, the published export (not the staging directory) recorded on
object storage (`ram://`), and the settler making the final export a finished run still
owes. Real checkpoints and a real `Evaluator` in `tmp_path`."""

import json
import logging
import os
import uuid

import numpy as np
import pytest
import tensorflow as tf

from fakes import (DirectoryTarget, FinalOnlyExporter, RecordingExporter, point_state_file_at,
                   write_checkpoint)
from test_evaluation_staged_export import EstimatorStyleExporter
from trainexec.evaluation.final_export import (FINAL_EXPORT_FILE, FinalExportRecord,
                                               FinalExportSettler, FinalOnce,
                                               estimator_state_dir)
from trainexec.evaluation.one_pass import Evaluator

pytestmark = pytest.mark.tf_line


def export(exporter, checkpoint, final, export_path="/export/x", metrics=None):
    return exporter.export(estimator=None, export_path=export_path,
                           checkpoint_path=checkpoint, is_the_final_export=final,
                           eval_result=metrics or {"global_step": 20, "loss": 0.5})


def test_a_final_export_is_recorded_where_and_as_the_docs_say(tmp_path):
    prefix = write_checkpoint(str(tmp_path / "model"), 20)
    state = estimator_state_dir(str(tmp_path / "model") + "/", None)
    assert state == f"{tmp_path}/model/trainexec/eval"
    assert estimator_state_dir("gs://b/m", "holdout") == "gs://b/m/trainexec/eval_holdout"
    record = FinalExportRecord(state)
    latest = FinalOnce(RecordingExporter("latest"), record)
    assert export(latest, prefix, final=False) == "/export/x"
    assert record.read() is None  # a non-final export is not recorded
    export(latest, prefix, final=True, export_path="/export/latest")
    written = json.loads(open(f"{state}/{FINAL_EXPORT_FILE}").read())
    assert written.pop("recorded_at") > 0
    assert written == {
        "checkpoint": prefix, "checkpoint_written_nsec": os.stat(prefix + ".index").st_mtime_ns,
        "global_step": 20, "metrics": {"global_step": 20, "loss": 0.5},
        "exports": {"latest": ["/export/latest", False]}, "complete": False}
    assert record.done_for(prefix) is None  # not complete: the evaluation is not over


def test_bytes_and_numpy_values_are_recorded_and_given_back_as_they_were(tmp_path):
    record = FinalExportRecord(str(tmp_path))
    record.add("/m/model.ckpt-20",
               {"global_step": np.int64(20), "loss": np.float32(0.25),
                "per_class": np.array([1, 2])},
               {"saved": b"/export/latest/1763", "declined": None, "best": "/export/best/20"})
    done = FinalExportRecord(str(tmp_path)).read()
    assert done.global_step == 20 and type(done.global_step) is int
    assert done.metrics == {"global_step": 20, "loss": 0.25, "per_class": [1, 2]}
    assert done.export_result("saved") == b"/export/latest/1763"
    assert done.export_results(["best", "declined", "added later"]) == [
        "/export/best/20", None, None]


def test_done_wants_a_complete_record_of_this_checkpoint_from_every_named_exporter(tmp_path):
    record = FinalExportRecord(str(tmp_path / "state"))
    c10, c20 = "/m/model.ckpt-10", "/m/model.ckpt-20"
    record.add(c10, {"global_step": 10}, {"a": "/e/a/10"}, complete=True)
    record.add(c20, {"global_step": 20}, {"a": "/e/a/20"})  # a new checkpoint: new record
    assert record.read().exports == {"a": ["/e/a/20", False]}
    assert record.done_for(c10, ["a"]) is None and record.done_for(c20, ["a"]) is None
    record.add(c20, {"global_step": 20}, {"b": "/e/b/20"}, complete=True)  # gathered
    assert record.done_for(c20, ["a", "b"]).exports == {"a": ["/e/a/20", False],
                                                        "b": ["/e/b/20", False]}
    assert record.done_for(c20, ["a", "b", "c"]) is None  # an exporter added since
    assert record.done_for(None) is None and record.done_for("/m/model.ckpt-30") is None


def test_a_keras_file_is_known_by_its_own_time_also_recorded_in_whole_seconds(tmp_path):
    checkpoint = tmp_path / "ckpt-2.weights.h5"
    checkpoint.write_bytes(b"weights")
    os.utime(checkpoint, ns=(1_700_000_000_250_000_000,) * 2)
    record = FinalExportRecord(str(tmp_path / "state"))
    record.add(str(checkpoint), {"global_step": 16})
    assert record.read().checkpoint_written_nsec == 1_700_000_000_250_000_000
    path = tmp_path / "state" / FINAL_EXPORT_FILE
    for recorded, same in [(1_700_000_000_000_000_000, True),  # an older stat's seconds
                           (1_699_999_999_000_000_000, False),
                           (1_700_000_000_100_000_000, False)]:  # another write
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "checkpoint_written_nsec": recorded}))
        assert record.is_for(record.read(), str(checkpoint)) is same, recorded
    assert record.is_for(record.read(), str(tmp_path / "other" / "ckpt-2.weights.h5"))
    assert not record.is_for(record.read(), str(tmp_path / "ckpt-3.weights.h5"))


def test_an_unreadable_record_is_ignored_and_the_final_export_made(tmp_path, caplog):
    prefix = write_checkpoint(str(tmp_path / "model"), 20)
    (tmp_path / FINAL_EXPORT_FILE).write_text('{"checkpoint": "/m/model.ck')  # cut short
    recorder = FinalOnlyExporter("final")
    with caplog.at_level(logging.WARNING, logger="trainexec.records.layout"):
        assert export(FinalOnce(recorder, FinalExportRecord(str(tmp_path))), prefix,
                      final=True) == "/export/x"
    assert len(recorder.calls) == 1
    assert any(r.getMessage().startswith("Ignoring unreadable final-export record "
                                         f"{tmp_path}/{FINAL_EXPORT_FILE}")
               for r in caplog.records)
    assert FinalExportRecord(str(tmp_path)).read().exports == {"final": ["/export/x", False]}


def test_on_object_storage_the_published_export_is_recorded_not_the_stage():
    root = f"ram://final-{uuid.uuid4().hex}"
    exporter = EstimatorStyleExporter()
    once = FinalOnce(exporter, FinalExportRecord(f"{root}/state"))
    base = f"{root}/export/latest"
    assert export(once, "/m/model.ckpt-20", final=True, export_path=base) == \
        f"{base}/20".encode()
    assert [n.rstrip("/") for n in tf.io.gfile.listdir(base)] == ["20"]  # nothing staged
    assert tf.io.gfile.exists(f"{base}/20/saved_model.pb")
    assert exporter.asked[0].startswith(f"{base}/.tmp-")  # it wrote in a staging directory
    again = FinalOnce(EstimatorStyleExporter(), FinalExportRecord(f"{root}/state"))
    assert export(again, "/m/model.ckpt-20", final=True, export_path=base) == \
        f"{base}/20".encode()
    assert again.exporter.asked == []  # recorded: not exported again


def settled_evaluator(tmp_path):
    model_dir = str(tmp_path / "model")
    prefix = write_checkpoint(model_dir, 20)
    point_state_file_at(model_dir, prefix)
    record = FinalExportRecord(str(tmp_path / "state"))
    latest, final = RecordingExporter("latest"), FinalOnlyExporter("final")
    evaluator = Evaluator(DirectoryTarget(model_dir),
                          [FinalOnce(latest, record), FinalOnce(final, record)])
    settler = FinalExportSettler(evaluator, record, ["latest", "final"])
    return evaluator, settler, record, prefix, latest, final


def test_a_finished_run_gets_its_owed_final_export_once_recorded_complete(tmp_path):
    evaluator, settler, record, prefix, latest, final = settled_evaluator(tmp_path)
    assert settler.run_over() == [] and record.read() is None  # nothing evaluated yet
    evaluator.evaluate_and_export()  # not known to be the last: the final one declines
    settler.after_eval(evaluator.last_result)
    assert record.read() is None
    paths = [os.path.join(str(tmp_path / "model"), "export", n) for n in ("latest", "final")]
    assert settler.run_over() == paths
    assert settler.run_over() == paths  # asked again: no second export
    assert [c["final"] for c in latest.calls] == [False]  # its export stands
    assert [c["final"] for c in final.calls] == [False, True]
    done = record.done_for(prefix, ["latest", "final"])
    assert done.metrics == {"global_step": 20, "loss": 1 / 21}
    assert done.export_results(["latest", "final"]) == paths


def test_a_final_evaluation_is_recorded_complete_right_after_it(tmp_path):
    evaluator, settler, record, prefix, latest, final = settled_evaluator(tmp_path)
    evaluator.evaluate_and_export(is_final=True)
    assert record.read().complete is False  # exporters recorded, evaluation not settled
    settler.after_eval(evaluator.last_result)
    assert record.done_for(prefix, ["latest", "final"]).global_step == 20
    assert settler.completed.checkpoint == prefix
    assert [c["final"] for c in latest.calls + final.calls] == [True, True]
