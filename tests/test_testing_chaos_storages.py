"""The chaos runs' storages: what each gives the pods and the bed, the one staleness
figure each adds to the bound, the runner's view of model_dir read behind no cache
(local and NFS-like here; the gs:// bucket's view runs against the emulator in
tests/cluster/test_testing_gcs.py), and what a storage fault's `with DETAIL` does on
each storage."""

import errno
import re

import pytest

from trainexec.testing.chaos.schedule import Fault
from trainexec.testing.chaos.storages import (STORAGE_STALENESS_SECS, LocalStorage,
                                              NfsStorage, fault_setting, result_of,
                                              storage_for)

pytestmark = pytest.mark.any_line


def test_storages_by_name_and_their_staleness(tmp_path):
    assert {name: storage_for(name, str(tmp_path)).staleness_secs
            for name in ("local", "nfs", "gs")} == STORAGE_STALENESS_SECS == {
        "local": 0.0, "nfs": 60.0, "gs": 5.0}
    assert storage_for("gs", str(tmp_path)).extra_hosts == ("gcs",)
    # Only a gs:// outage outlasts its end: a request that could not connect waits for
    # its next SYN or TensorFlow's GCS client's give-up after 60 s without progress.
    assert {name: dict(storage_for(name, str(tmp_path)).lingers_secs)
            for name in ("local", "nfs", "gs")} == {
        "local": {}, "nfs": {}, "gs": {"storage-outage": 35.0}}
    assert "aliases" in storage_for("gs", str(tmp_path)).bed_options()
    with pytest.raises(ValueError, match="use one of local, nfs, gs"):
        storage_for("s3", str(tmp_path))


def test_local_files_are_every_file_under_model_dir_with_its_size(tmp_path):
    storage = LocalStorage(str(tmp_path))
    with storage.started(bed=None):
        (tmp_path / "model" / "export" / "final" / "7").mkdir(parents=True)
        (tmp_path / "model" / "export" / "final" / "7" / "saved_model.pb").write_bytes(b"abc")
        (tmp_path / "model" / "checkpoint").write_text("x")
        assert storage.files() == {"checkpoint": 1, "export/final/7/saved_model.pb": 3}
        assert storage.read("checkpoint") == b"x" and storage.read("nothing") is None
        assert storage.job_paths().model_dir == str(tmp_path / "model")
        assert result_of(storage) is None
        (tmp_path / "final_result.json").write_text('{"global_step": 1200}')
        assert result_of(storage) == {"global_step": 1200}


def test_nfs_pods_see_the_mount_point_and_the_runner_reads_the_backing(tmp_path):
    storage = NfsStorage(str(tmp_path))
    paths = storage.job_paths()
    assert paths.model_dir == storage.shared.on_hosts("model")
    assert not paths.model_dir.startswith(str(tmp_path))  # the hosts' view, not backing
    with storage.started(bed=None):
        (tmp_path / "shared" / "model" / "ckpt-5.index").write_bytes(b"ab")
        assert storage.files() == {"ckpt-5.index": 2}


def test_a_fault_end_still_to_come_is_not_played_on_a_stopped_storage(tmp_path, monkeypatch):
    # An interrupted run (its runner SIGTERMed) takes the bed down with a full disk's
    # end still due: freeing a volume that is gone would only raise on a timer thread.
    import time

    from trainexec.testing.chaos.schedule import Fault

    from trainexec.testing.storage import SharedDir

    storage = NfsStorage(str(tmp_path), faults=True)
    played = []
    monkeypatch.setattr(SharedDir, "fill", lambda self: played.append("fill"))
    monkeypatch.setattr(SharedDir, "free", lambda self: played.append("free"))
    with storage.started(bed=None):
        storage.apply(Fault("disk-full", "storage", 0, 0.0, 0.05))
        deadline = time.monotonic() + 10
        while played != ["fill", "free"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert played == ["fill", "free"]  # a fault over within the run ends
        storage.apply(Fault("disk-full", "storage", 0, 0.0, 0.3))
    time.sleep(0.6)
    assert played == ["fill", "free", "fill"]


@pytest.mark.parametrize("storage,kind,detail,setting", [
    ("nfs", "storage-errors", "", errno.EIO), ("nfs", "storage-errors", "ESTALE", errno.ESTALE),
    ("nfs", "storage-slow", "", 0.05), ("nfs", "storage-slow", "2.5s", 2.5),
    ("nfs", "storage-outage", "", None), ("nfs", "disk-full", "", None),
    ("gs", "storage-errors", "", 503), ("gs", "storage-errors", "429", 429),
    ("gs", "storage-slow", "", 1.0), ("gs", "storage-outage", "", None)])
def test_a_storage_fault_detail_is_read_by_its_storage(storage, kind, detail, setting):
    assert fault_setting(storage, kind, detail) == setting


@pytest.mark.parametrize("storage,kind,detail,words", [
    ("gs", "storage-errors", "EIO", "write 'with 503'"),
    ("gs", "storage-errors", "200", "write 'with 503'"),
    ("nfs", "storage-errors", "503", "write 'with EIO'"),
    ("nfs", "storage-errors", "eio", "write 'with EIO'"),
    ("nfs", "storage-slow", "2", "write 'with 1s'"), ("gs", "storage-slow", "0s", "write 'with 1s'"),
    ("nfs", "storage-slow", "nans", "write 'with 1s'"),
    ("gs", "storage-slow", "infs", "write 'with 1s'"),
    ("nfs", "storage-outage", "EIO", "drop 'EIO'"), ("gs", "disk-full", "", "no disk to fill"),
    ("local", "storage-errors", "", "use --storage nfs or gs")])
def test_a_detail_its_storage_cannot_apply_is_refused_saying_what_to_write(
        storage, kind, detail, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        fault_setting(storage, kind, detail)


@pytest.mark.parametrize("storage,words", [("gs", "gs:// storage"),
                                           ("nfs", "NFS-like storage")])
def test_a_pod_fault_given_to_the_storage_is_refused(tmp_path, storage, words):
    # before, the NFS-like storage took any kind it did not know for a full disk
    with pytest.raises(ValueError, match=f"kill is not a fault of {words}"):
        storage_for(storage, str(tmp_path)).apply(Fault("kill", "worker", 0, 1.0))
