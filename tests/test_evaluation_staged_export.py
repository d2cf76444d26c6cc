"""trainexec/evaluation/staged_export.py: a tf.estimator-style exporter made to publish
whole exports on object storage (TensorFlow's `ram://` file system stands in for
`gs://`): it writes in a staging directory, the export appears under its own name with
every file, a publication cut short never counts and is replaced, a whole export is never
overwritten, and nothing staged is left behind. (The same across real GCS, an evaluator
killed: tests/cluster/test_storage_gcs.py.)"""

import dataclasses
import subprocess
import uuid

import pytest
import tensorflow as tf

from test_evaluation_export_files import _write_saved_model_files, dead_pid
from trainexec.evaluation.export_files import ExportFileManager, is_whole
from trainexec.evaluation.staged_export import export_staged, needs_staging
from trainexec.records.liveness import Owner

pytestmark = pytest.mark.tf_line

FILES = ("fingerprint.pb", "saved_model.pb", "variables/variables.index",
         "variables/variables.data-00000-of-00001", "assets/vocab.txt")


class EstimatorStyleExporter:
    """Exports as tf.estimator's exporters do, seen from outside: a SavedModel's files in
    `<export_path>/<global step>` (tf.estimator's is a timestamp), its path returned as
    bytes; records where it was asked to write."""

    name = "latest"

    def __init__(self, as_bytes=True, fail=None):
        self.as_bytes, self.fail, self.asked = as_bytes, fail, []

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        self.asked.append(export_path)
        path = f"{export_path}/{eval_result['global_step']}"
        _write_saved_model_files(path)
        if self.fail:
            raise self.fail
        return path.encode() if self.as_bytes else path


def _base():
    return f"ram://staged-{uuid.uuid4().hex}/export/latest"


def _export(exporter, base, step=16):
    return export_staged(exporter, estimator=None, export_path=base,
                         checkpoint_path=f"/m/model.ckpt-{step}",
                         eval_result={"global_step": step}, is_the_final_export=False)


def _listed(directory):
    return sorted(name.rstrip("/") for name in tf.io.gfile.listdir(directory))


class WholeByItself:
    """One of trainexec's exporters, which publish whole exports themselves."""

    publishes_whole_exports = True


@pytest.mark.parametrize("exporter, path, staged", [
    (EstimatorStyleExporter(), "gs://bucket/m/export/latest", True),
    (EstimatorStyleExporter(), "/nfs/m/export/latest", False),  # a rename is whole there
    (WholeByItself(), "gs://bucket/m/export/x", False),
])
def test_only_an_exporter_writing_to_object_storage_by_itself_is_staged(
        exporter, path, staged):
    assert needs_staging(exporter, path) is staged


@pytest.mark.parametrize("as_bytes", [True, False], ids=["bytes", "str"])
def test_the_export_is_written_in_staging_then_published_whole_under_its_name(as_bytes):
    base, exporter = _base(), EstimatorStyleExporter(as_bytes=as_bytes)
    path = _export(exporter, base)
    assert path == (f"{base}/16".encode() if as_bytes else f"{base}/16")
    stage = exporter.asked[0]
    assert stage.startswith(f"{base}/.tmp-") and stage.endswith(Owner.current().tag())
    for name in FILES:  # every file, with what the exporter wrote in it
        with tf.io.gfile.GFile(f"{base}/16/{name}") as f:
            assert f.read() == name
    assert _listed(base) == ["16"]  # nothing staged left
    assert ExportFileManager(base).exports() == [f"{base}/16"]


def test_an_exporter_that_exports_nothing_this_time_leaves_nothing():
    class FinalOnly(EstimatorStyleExporter):
        def export(self, *args, **kwargs):
            super().export(*args, **kwargs)
            return None  # as FinalExporter before the final export
    base = _base()
    assert _export(FinalOnly(), base) is None
    assert _listed(base) == []


def test_a_failed_export_is_raised_and_leaves_nothing():
    base = _base()
    with pytest.raises(OSError, match="disk full"):
        _export(EstimatorStyleExporter(fail=OSError("disk full")), base)
    assert _listed(base) == []


@pytest.mark.parametrize("again", [16, 24], ids=["same-checkpoint", "later-checkpoint"])
def test_a_publication_cut_short_is_no_export_and_the_next_one_replaces_it(
        monkeypatch, again):
    base, real_copy = _base(), tf.io.gfile.copy

    def killed_before_the_graph(src, dst, overwrite=False):
        if dst.endswith("/saved_model.pb"):
            raise KeyboardInterrupt("evaluator killed")
        real_copy(src, dst, overwrite)
    monkeypatch.setattr(tf.io.gfile, "copy", killed_before_the_graph)
    with pytest.raises(KeyboardInterrupt):
        _export(EstimatorStyleExporter(), base)
    monkeypatch.setattr(tf.io.gfile, "copy", real_copy)
    assert _listed(base) == ["16"] and not is_whole(f"{base}/16")  # what the kill left
    assert ExportFileManager(base).exports() == []  # which is not an export
    # The evaluator restarted exports that checkpoint again, or its next one.
    assert _export(EstimatorStyleExporter(), base, again) == f"{base}/{again}".encode()
    assert _listed(base) == [str(again)]  # the partial one is gone
    assert _listed(f"{base}/{again}") == ["assets", "fingerprint.pb", "saved_model.pb",
                                          "variables"]
    assert ExportFileManager(base).exports() == [f"{base}/{again}"]


def test_a_whole_export_of_that_number_is_never_overwritten():
    base = _base()

    def earlier(tmp):
        tf.io.gfile.makedirs(tmp)
        for name in ("saved_model.pb", "earlier.txt"):
            with tf.io.gfile.GFile(f"{tmp}/{name}", "w") as f:
                f.write("earlier")
    ExportFileManager(base).write(f"{base}/16", earlier)
    assert _export(EstimatorStyleExporter(), base) == f"{base}/16".encode()
    assert _listed(f"{base}/16") == ["earlier.txt", "saved_model.pb"]
    assert _listed(base) == ["16"]


def test_old_exports_are_collected_in_the_real_directory_once_the_new_one_is_whole():
    class Collecting(EstimatorStyleExporter):
        collected = []

        def _garbage_collect_exports(self, export_dir_base):
            self.collected.append((export_dir_base, is_whole(f"{export_dir_base}/24")))
    base = _base()
    assert _export(Collecting(), base, step=24) == f"{base}/24".encode()
    assert Collecting.collected == [(base, True)]


def test_staging_of_a_gone_writer_is_removed_and_a_live_writers_kept():
    base, me = _base(), Owner.current()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        writers = {"live": dataclasses.replace(me, pid=sleeper.pid, started=None),
                   "dead": dataclasses.replace(me, pid=dead_pid(), started=None),
                   "this process, earlier": me}
        stages = {who: f".tmp-0-{uuid.uuid4().hex}-{owner.tag()}"
                  for who, owner in writers.items()}
        for stage in stages.values():
            _write_saved_model_files(f"{base}/{stage}")
        assert _export(EstimatorStyleExporter(), base) == f"{base}/16".encode()
        assert _listed(base) == sorted(["16", stages["live"]])
    finally:
        sleeper.kill()
        sleeper.wait()
