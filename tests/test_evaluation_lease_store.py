"""trainexec/evaluation/lease_store.py on its own: a lease file created only if absent
(by one of many racing creators, with or without hard links), read with a version, and
replaced or deleted only while still at the version its writer read; the store chosen by
the path's scheme, a bad gs:// path refused, and TensorFlow's other file systems (`ram://`
standing in) served best effort, with one warning per scheme. Real files in `tmp_path`.
(The lease built on it: tests/test_evaluation_lease.py; on real gs://:
tests/cluster/test_storage_gcs.py.)"""

import logging
import os
import threading
import uuid

import pytest

from trainexec.errors import ConfigError
from trainexec.evaluation import lease_store as store_module
from trainexec.evaluation.lease_store import FileLeaseStore, GcsLeaseStore, lease_store

pytestmark = pytest.mark.any_line


def test_a_lease_file_is_created_once_and_leaves_nothing_beside_it(tmp_path):
    path = tmp_path / "state" / "eval" / "evaluator_lease.json"  # directories made
    first, second = FileLeaseStore(str(path)), FileLeaseStore(str(path))
    assert first.read() is None
    assert first.create('{"token": "a"}') is True
    assert second.create('{"token": "b"}') is False
    found = second.read()
    assert found.text == '{"token": "a"}'
    assert found.mtime == os.stat(path).st_mtime_ns / 1e9
    assert os.listdir(path.parent) == ["evaluator_lease.json"]  # no temporary file


def test_of_many_creators_racing_exactly_one_wins(tmp_path):
    path = str(tmp_path / "evaluator_lease.json")
    start, won = threading.Barrier(8), []

    def create(i):
        start.wait()
        if FileLeaseStore(path).create(f"creator {i}"):
            won.append(i)
    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    assert FileLeaseStore(path).read().text == f"creator {won[0]}"


def test_without_hard_links_creation_stays_exclusive(tmp_path, monkeypatch):
    def no_links(src, dst):  # as on a FUSE file system that has none
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "link", no_links)
    store = FileLeaseStore(str(tmp_path / "evaluator_lease.json"))
    assert store.create("mine") is True
    assert store.create("theirs") is False
    assert store.read().text == "mine"
    assert os.listdir(tmp_path) == ["evaluator_lease.json"]


def test_a_change_is_made_only_at_the_version_its_writer_read(tmp_path):
    store = FileLeaseStore(str(tmp_path / "evaluator_lease.json"))
    store.create('{"renewals": 0}')
    read = store.read()
    assert store.replace('{"renewals": 1}', read.version) is True
    assert store.read().text == '{"renewals": 1}'
    # A second writer still holding the first version changes nothing, even with a
    # text of the same length.
    assert store.replace('{"renewals": 9}', read.version) is False
    assert store.delete(read.version) is False
    assert store.read().text == '{"renewals": 1}'
    assert store.delete(store.read().version) is True
    assert not os.path.exists(store.path)
    assert store.replace("{}", read.version) is False and store.read() is None


def test_the_store_is_chosen_by_the_paths_scheme_and_a_bad_gs_path_is_refused(tmp_path):
    assert isinstance(lease_store(str(tmp_path / "evaluator_lease.json")), FileLeaseStore)
    gcs = lease_store("gs://bucket/model/trainexec/eval/evaluator_lease.json")
    assert isinstance(gcs, GcsLeaseStore)  # no client made, nothing asked yet
    for bad in ("gs://bucket", "gs:///evaluator_lease.json"):
        with pytest.raises(ConfigError, match=f"lease path '{bad}' is not gs://BUCKET/OBJECT"):
            lease_store(bad)


def test_another_tensorflow_file_system_is_warned_of_once_per_scheme(monkeypatch, caplog):
    monkeypatch.setattr(store_module._TensorFlowStore, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="trainexec.evaluation.lease_store"):
        lease_store("hdfs://namenode/model/evaluator_lease.json")
        lease_store("hdfs://namenode/other/evaluator_lease.json")
        lease_store("ram://model/evaluator_lease.json")
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2
    assert warned[0].startswith("The evaluator lease on hdfs:// is not exclusive")
    assert warned[1].startswith("The evaluator lease on ram:// is not exclusive")
    assert "Use a local or NFS path, or gs://" in warned[0]


@pytest.mark.tf_line
def test_on_another_tensorflow_file_system_changes_check_the_version(caplog):
    import tensorflow as tf

    path = f"ram://lease-{uuid.uuid4().hex}/evaluator_lease.json"
    store = lease_store(path)
    assert store.read() is None
    tf.io.gfile.makedirs(path.rsplit("/", 1)[0])
    with tf.io.gfile.GFile(path, "w") as f:
        f.write('{"renewals": 0}')
    read = store.read()
    assert read.text == '{"renewals": 0}'
    # ram:// stamps no modification time (0), so there the version is the text's length:
    # the replacement below writes a longer text.
    assert store.replace('{"renewals": 10}', read.version) is True
    assert store.replace('{"renewals": 2}', read.version) is False  # changed since
    assert store.delete(read.version) is False
    assert store.read().text == '{"renewals": 10}'
    assert store.delete(store.read().version) is True
    assert not tf.io.gfile.exists(path) and store.read() is None
