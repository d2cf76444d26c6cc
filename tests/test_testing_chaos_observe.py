"""What a chaos run leaves, read from outside the bed: the pods' log lines and the
evaluator's evaluations, complete checkpoints, the newest one, whole exports (on a
local storage's snapshot; the gs:// bucket's snapshot is read the same way, from
`GcsEmulator.list_objects`)."""

import pytest

from trainexec.testing.chaos.observe import (collect_log, complete, export_dirs,
                                             newest_checkpoint)
from trainexec.testing.chaos.storages import LocalStorage

pytestmark = pytest.mark.any_line

T0 = 1000.0


def test_the_log_gives_lines_and_evaluated_checkpoints(tmp_path):
    log = tmp_path / "pods.log"
    log.write_text(
        "   22.7 [evaluator:0] [evaluator:0] INFO trainexec.keras.evaluate.target: "
        "Evaluation starts\n"
        "   24.2 [evaluator:0] [evaluator:0] INFO trainexec.evaluation.loop: Evaluated "
        "/m/ckpt-100 (step 100) in 1.7s: accuracy = 0.97\n"
        "   25.0 [worker:0] Evaluated /m/ckpt-100 (step 100) said elsewhere\n"
        "not a pod line\n")
    lines, evaluated = collect_log(str(log), T0)
    assert [(line.at, line.task) for line in lines] == [
        (T0 + 22.7, "evaluator:0"), (T0 + 24.2, "evaluator:0"), (T0 + 25.0, "worker:0")]
    assert [(e.path, e.step) for e in evaluated] == [("/m/ckpt-100", 100)]


def test_checkpoint_files_and_exports_as_the_storage_holds_them(tmp_path):
    storage = LocalStorage(str(tmp_path))
    model = tmp_path / "model"
    model.mkdir()
    (model / "checkpoint").write_text('model_checkpoint_path: "/pods/m/ckpt-300"\n'
                                      'all_model_checkpoint_paths: "/pods/m/ckpt-200"\n')
    assert newest_checkpoint(storage.read("checkpoint")) == "ckpt-300"
    assert newest_checkpoint(None) is None
    (model / "ckpt-300.index").write_bytes(b"x")
    assert not complete(storage.files(), "ckpt-300")  # no data shard
    (model / "ckpt-300.data-00000-of-00002").write_bytes(b"x")
    assert not complete(storage.files(), "ckpt-300")  # one of two
    (model / "ckpt-300.data-00001-of-00002").write_bytes(b"x")
    assert complete(storage.files(), "ckpt-300")
    (model / "ckpt-400.index").write_bytes(b"")
    (model / "ckpt-400.data-00000-of-00001").write_bytes(b"x")
    assert not complete(storage.files(), "ckpt-400")  # an empty index
    base = model / "export" / "final"
    whole = base / "1200"
    (whole / "variables").mkdir(parents=True)
    for name in ("saved_model.pb", "variables/variables.index",
                 "variables/variables.data-00000-of-00001"):
        (whole / name).write_bytes(b"x")
    (base / "1300").mkdir()
    (base / "1300" / "saved_model.pb").write_bytes(b"x")
    (base / ".tmp-1300-abc").mkdir()
    (base / ".tmp-1300-abc" / "saved_model.pb").write_bytes(b"x")
    found = export_dirs(storage.files(), "export/final")
    assert [(e.path, e.whole, e.missing) for e in found] == [
        ("export/final/1200", True, ()),
        ("export/final/1300", False, ("variables/variables.index",
                                      "variables/variables.data-*"))]
