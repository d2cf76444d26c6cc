"""Tests of trainexec.records.layout: atomic records, reads that survive a bad file, file times."""

import json
import logging
import os
import time

import pytest
import tensorflow as tf

from trainexec.records.layout import (COMPLETION_FILE, FINISHED_DIR, atomic_write_text,
                               eval_state_dir, file_system_now, listed, make_watched_dir,
                               mtime_nsec, read_json_file,
                               read_record, record_path, task_file_name, task_of_file_name,
                               write_json)

pytestmark = pytest.mark.tf_line


def test_failed_atomic_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "record.json"
    target.mkdir()
    (target / "in-the-way").write_text("")  # the rename cannot replace a full directory
    with pytest.raises((tf.errors.OpError, OSError)):
        atomic_write_text(str(target), json.dumps({"a": 1}))
    assert sorted(os.listdir(tmp_path)) == ["record.json"]
    assert os.listdir(target) == ["in-the-way"]


def test_a_record_is_written_whole_with_sorted_keys_and_read_back(tmp_path):
    path = record_path(str(tmp_path), FINISHED_DIR + "/" + task_file_name("worker:1"))
    write_json(path, {"task": "worker:1", "finished_at": 5.0})
    assert path == f"{tmp_path}/trainexec/finished/worker-1.json"
    assert open(path).read() == '{"finished_at": 5.0, "task": "worker:1"}'
    assert read_json_file(path) == {"task": "worker:1", "finished_at": 5.0}
    assert os.listdir(os.path.dirname(path)) == ["worker-1.json"]  # no temporary left


def test_an_absent_record_reads_as_none_silently(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        assert read_record(str(tmp_path / "none.json"), dict, "thing") is None
    assert caplog.records == []


def test_a_file_is_listed_only_where_a_listing_of_its_directory_shows_it(tmp_path,
                                                                        monkeypatch):
    (tmp_path / "there.json").write_text("{}")
    assert listed(str(tmp_path / "there.json"))
    assert not listed(str(tmp_path / "absent.json"))
    assert not listed(str(tmp_path / "no-dir" / "absent.json"))
    assert not listed(str(tmp_path / "there.json" / "under-a-file"))
    monkeypatch.chdir(tmp_path)
    assert listed("there.json")
    assert listed("gs://bucket/model/trainexec/training_complete.json")  # no such cache


def test_a_directory_this_process_may_not_list_leaves_the_plain_look_up_to_decide(
        tmp_path, monkeypatch):
    def refused(directory):
        raise PermissionError(13, "Permission denied", directory)

    (tmp_path / "record.json").write_text('{"a": 1}')
    monkeypatch.setattr(os, "listdir", refused)
    assert listed(str(tmp_path / "record.json"))
    assert read_json_file(str(tmp_path / "record.json")) == {"a": 1}


def test_a_watched_directory_is_made_locally_and_a_failure_only_logged(tmp_path, caplog):
    make_watched_dir(str(tmp_path / "model" / "trainexec"))
    assert (tmp_path / "model" / "trainexec").is_dir()
    make_watched_dir(str(tmp_path / "model" / "trainexec"))  # there already: nothing
    (tmp_path / "a-file").write_text("")
    with caplog.at_level(logging.INFO, logger="trainexec.records.layout"):
        make_watched_dir(str(tmp_path / "a-file" / "trainexec"))
    assert f"Could not make {tmp_path}/a-file/trainexec" in caplog.text
    make_watched_dir("gs://bucket/model/trainexec")  # a URL: nothing to make


def test_a_local_record_no_listing_shows_is_not_looked_up(tmp_path, monkeypatch):
    # On NFS a failed look-up is remembered up to 60 s (tests/cluster/
    # test_records_nfs_lookups.py runs it for real): absent from the listing, the
    # file is never opened.
    path = tmp_path / "record.json"
    path.write_text('{"a": 1}')
    monkeypatch.setattr(os, "listdir", lambda directory: [])
    opened = []
    monkeypatch.setattr("builtins.open", lambda *args, **kwargs: opened.append(args))
    assert read_json_file(str(path)) is None
    assert opened == []


@pytest.mark.parametrize("content,parse", [
    ("{not json", dict),
    ('{"a": 1}', lambda data: data["missing"]),   # KeyError
    ('[1, 2]', lambda data: data.get("a")),       # AttributeError
    ('{"a": "x"}', lambda data: float(data["a"])),  # ValueError
])
def test_an_unreadable_record_is_named_in_a_warning_and_ignored(tmp_path, caplog, content,
                                                                parse):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with caplog.at_level(logging.WARNING, logger="trainexec.records.layout"):
        assert read_record(str(path), parse, "completion record") is None
    assert len(caplog.records) == 1
    assert caplog.records[0].getMessage().startswith(
        f"Ignoring unreadable completion record {path}: ")


def test_file_times_keep_sub_second_resolution_locally(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("")
    os.utime(first, ns=(1_700_000_000_250_000_000, 1_700_000_000_250_000_000))
    second.write_text("")
    os.utime(second, ns=(1_700_000_000_750_000_000, 1_700_000_000_750_000_000))
    # TensorFlow's stat rounds both to the same second; "written since" needs better.
    assert mtime_nsec(str(second)) - mtime_nsec(str(first)) == 500_000_000
    with pytest.raises(FileNotFoundError):
        mtime_nsec(str(tmp_path / "gone"))


def test_file_system_now_is_the_file_systems_clock_and_leaves_nothing(tmp_path):
    before = time.time()
    now = file_system_now(str(tmp_path / "dir"))
    assert before - 1 <= now <= time.time() + 1
    assert os.listdir(tmp_path / "dir") == []


@pytest.mark.parametrize("task", ["chief:0", "worker:12", "ps:1", "evaluator:0"])
def test_task_file_names_round_trip(task):
    assert task_of_file_name(task_file_name(task)) == task


def test_the_layout_under_the_model_dir():
    assert record_path("gs://b/m/", COMPLETION_FILE) == "gs://b/m/trainexec/training_complete.json"
    assert eval_state_dir("/m", None) == "/m/trainexec/eval"
    assert eval_state_dir("/m", "holdout") == "/m/trainexec/eval_holdout"
