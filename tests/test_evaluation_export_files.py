"""ExportFileManager on real directories: numbered exports, atomic writes, and the
clean-up of interrupted exports, which removes only those whose writer is provably gone."""

import dataclasses
import os
import subprocess
import uuid

import pytest

from trainexec.evaluation.export_files import ExportFileManager
from trainexec.records.liveness import Owner

pytestmark = pytest.mark.tf_line


def dead_pid():
    """The pid of a process that has exited (and was reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def temp_dir_of(base, owner, number=8):
    """An export's temporary directory as `owner` names it, with a file in it."""
    path = base / f".tmp-{number}-{uuid.uuid4().hex}-{owner.tag()}"
    (path / "variables").mkdir(parents=True)
    (path / "saved_model.pb").write_bytes(b"half")
    return path


def age(path, secs):
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            stat = os.stat(os.path.join(root, name))
            os.utime(os.path.join(root, name), (stat.st_atime - secs, stat.st_mtime - secs))
    stat = os.stat(path)
    os.utime(path, (stat.st_atime - secs, stat.st_mtime - secs))


def test_temp_dirs_of_live_or_unknown_writers_are_left_alone(tmp_path):
    me = Owner.current()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        live = temp_dir_of(tmp_path, dataclasses.replace(me, pid=sleeper.pid, started=None))
        elsewhere = temp_dir_of(tmp_path, dataclasses.replace(me, host="other-host", pid=1))
        unnamed = tmp_path / f".tmp-8-{uuid.uuid4().hex}"  # an older trainexec's
        unnamed.mkdir()
        old_elsewhere = temp_dir_of(tmp_path, dataclasses.replace(me, host="gone-host"))
        age(old_elsewhere, 7200)
        dead = temp_dir_of(tmp_path, dataclasses.replace(me, pid=dead_pid(), started=None))
        removed = ExportFileManager(str(tmp_path)).remove_interrupted()
        assert sorted(removed) == sorted([str(old_elsewhere), str(dead)])
        assert sorted(os.listdir(tmp_path)) == sorted([live.name, elsewhere.name,
                                                       unnamed.name])
    finally:
        sleeper.kill()
        sleeper.wait()
    # Its writer gone, the live one's directory goes too; the others age out.
    assert ExportFileManager(str(tmp_path)).remove_interrupted() == [str(live)]
    age(elsewhere, 7200)
    age(unnamed, 7200)
    assert sorted(ExportFileManager(str(tmp_path)).remove_interrupted()) == sorted(
        [str(elsewhere), str(unnamed)])
    assert os.listdir(tmp_path) == []


def test_export_being_written_survives_another_writers_clean_up(tmp_path):
    # Two writers in one directory (two evaluators sharing it, or two threads):
    # the second one's clean-up must not delete the first one's export in progress.
    first, second = ExportFileManager(str(tmp_path)), ExportFileManager(str(tmp_path))

    def save_slowly(tmp):
        os.makedirs(os.path.join(tmp, "variables"))
        assert second.write(second.path_for(16), lambda t: os.makedirs(t))
        with open(os.path.join(tmp, "saved_model.pb"), "w") as f:
            f.write("whole")

    assert first.write(first.path_for(8), save_slowly)
    assert sorted(os.listdir(tmp_path)) == ["16", "8"]
    assert (tmp_path / "8" / "saved_model.pb").read_text() == "whole"


def test_failed_export_leaves_nothing_behind(tmp_path):
    files = ExportFileManager(str(tmp_path))

    def crash(tmp):
        os.makedirs(os.path.join(tmp, "variables"))
        raise OSError("disk full")
    with pytest.raises(OSError):
        files.write(files.path_for(8), crash)
    assert os.listdir(tmp_path) == []


# -- object storage: published file by file, the SavedModel's graph last ------------------

def _ram_dir() -> str:
    return f"ram://exports-{uuid.uuid4().hex}"


def _write_saved_model_files(tmp: str) -> None:
    import tensorflow as tf

    for name in ("fingerprint.pb", "saved_model.pb", "variables/variables.index",
                 "variables/variables.data-00000-of-00001", "assets/vocab.txt"):
        tf.io.gfile.makedirs(f"{tmp}/{name}".rsplit("/", 1)[0])
        with tf.io.gfile.GFile(f"{tmp}/{name}", "w") as f:
            f.write(name)


def test_on_object_storage_the_graph_is_published_after_everything_else(monkeypatch):
    import tensorflow as tf

    copied = []
    real_copy = tf.io.gfile.copy
    monkeypatch.setattr(tf.io.gfile, "copy", lambda src, dst, overwrite=False: (
        copied.append(dst.rsplit("/", 1)[-1]), real_copy(src, dst, overwrite))[1])
    files = ExportFileManager(_ram_dir())
    path = files.path_for(7)
    assert files.write(path, _write_saved_model_files)
    assert copied[-1] == "saved_model.pb" and len(copied) == 5
    assert files.exports() == [path]
    assert [n.rstrip("/") for n in tf.io.gfile.listdir(files.base_dir)] == ["7"]  # no tmp


def test_a_publication_cut_short_is_not_an_export_and_is_replaced(monkeypatch):
    import tensorflow as tf

    files = ExportFileManager(_ram_dir(), keep=1)
    path = files.path_for(7)
    real_copy = tf.io.gfile.copy

    def killed_before_the_graph(src, dst, overwrite=False):
        if dst.endswith("saved_model.pb"):
            raise KeyboardInterrupt("killed")  # the writer dies mid-publication
        real_copy(src, dst, overwrite)
    monkeypatch.setattr(tf.io.gfile, "copy", killed_before_the_graph)
    with pytest.raises(KeyboardInterrupt):
        files.write(path, _write_saved_model_files)
    monkeypatch.setattr(tf.io.gfile, "copy", real_copy)
    assert tf.io.gfile.exists(f"{path}/variables/variables.index")  # what it left
    assert files.exports() == [] and files.garbage_collect() == []  # not an export
    assert files.write(path, _write_saved_model_files)  # replaced, whole
    assert files.exports() == [path]
    assert files.write(path, _write_saved_model_files) is False  # a whole one stays
