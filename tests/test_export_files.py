"""ExportFileManager on real directories: numbered exports, atomic writes, and the
clean-up of interrupted exports, which removes only those whose writer is provably gone."""

import dataclasses
import os
import subprocess
import uuid

import pytest

from trainexec.evaluation.export_files import ExportFileManager
from trainexec.liveness import Owner


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
