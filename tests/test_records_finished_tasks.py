"""trainexec/records/finished_tasks.py: each training task's finished record under the
model directory, and a watcher that counts only the records (and the chief's completion
record) written at or after its start marker, by the file system's clock; a file being
renamed into place is never taken for a record. Real files in `tmp_path`. (A ps exiting
on them: tests/test_executor.py; a peer leaving: tests/test_tasks_peer_watchdog.py.)"""

import json
import os

import pytest

from trainexec.records.completion import record_training_complete
from trainexec.records.finished_tasks import FinishedTasks, record_task_finished

pytestmark = pytest.mark.tf_line


def set_mtime_ns(path, mtime_ns):
    os.utime(path, ns=(mtime_ns, mtime_ns))


def finished_record(model_dir, task):
    return model_dir / "trainexec" / "finished" / (task.replace(":", "-") + ".json")


def test_a_finished_record_is_written_where_the_docs_say_and_read_back(tmp_path):
    model_dir = tmp_path / "runs" / "model"  # not there yet: made
    record_task_finished(str(model_dir), "worker:1", wall_time=1763772000.5)
    record_task_finished(str(model_dir), "chief:0")
    path = finished_record(model_dir, "worker:1")
    assert json.loads(path.read_text()) == {"task": "worker:1", "finished_at": 1763772000.5}
    assert sorted(os.listdir(path.parent)) == ["chief-0.json", "worker-1.json"]
    assert FinishedTasks(str(model_dir), since_nsec=0).finished() == {"chief:0", "worker:1"}


def test_a_watcher_writes_its_marker_and_counts_records_from_its_mtime_on(tmp_path):
    record_task_finished(str(tmp_path), "chief:0")  # an earlier run's
    record_task_finished(str(tmp_path), "worker:0")
    watch = FinishedTasks.starting_now(str(tmp_path), "ps:0")
    marker = tmp_path / "trainexec" / "started" / "ps-0.json"
    assert json.loads(marker.read_text())["task"] == "ps:0"
    assert watch.since_nsec == marker.stat().st_mtime_ns
    set_mtime_ns(finished_record(tmp_path, "chief:0"), watch.since_nsec - 1)
    set_mtime_ns(finished_record(tmp_path, "worker:0"), watch.since_nsec)  # at: counts
    assert watch.finished() == {"worker:0"}
    assert watch.ever_finished() == {"chief:0", "worker:0"}
    record_task_finished(str(tmp_path), "chief:0")  # this run's chief finishes: rewritten
    assert watch.finished() == {"chief:0", "worker:0"}


def test_a_watcher_makes_the_records_directory_before_it_first_lists_it(tmp_path):
    # An NFS client remembers a directory it found missing (layout.listed): made by
    # the watcher's host at its start, it is never found missing there.
    FinishedTasks.starting_now(str(tmp_path), "ps:0")
    assert os.listdir(tmp_path / "trainexec" / "finished") == []


def test_a_record_being_renamed_into_place_and_other_files_are_not_records(tmp_path):
    directory = tmp_path / "trainexec" / "finished"
    directory.mkdir(parents=True)
    (directory / "worker-0.json.tmp-0123456789abcdef0123456789abcdef").write_text('{"task"')
    (directory / "notes.txt").write_text("worker:2 is slow")
    watch = FinishedTasks(str(tmp_path), since_nsec=0)
    assert watch.finished() == set() and watch.ever_finished() == set()
    record_task_finished(str(tmp_path), "worker:0")
    assert watch.finished() == {"worker:0"}


def test_without_a_model_dir_nothing_has_finished_or_completed(tmp_path):
    watch = FinishedTasks(str(tmp_path / "never-made"), since_nsec=0)
    assert watch.finished() == set()
    assert watch.ever_finished() == set()
    assert watch.completed_since() is False
    assert not (tmp_path / "never-made").exists()


def test_a_task_once_seen_finished_stays_finished(tmp_path):
    record_task_finished(str(tmp_path), "worker:0")
    watch = FinishedTasks(str(tmp_path), since_nsec=0)
    seen = watch.finished()
    seen.add("worker:9")  # the caller's copy
    os.remove(finished_record(tmp_path, "worker:0"))
    assert watch.finished() == {"worker:0"}
    assert watch.ever_finished() == set()  # which reads the directory as it is now


def test_only_a_completion_record_written_since_the_marker_counts(tmp_path):
    watch = FinishedTasks.starting_now(str(tmp_path), "worker:1")
    assert watch.completed_since() is False  # none yet
    record_training_complete(str(tmp_path), None, 100, 100)
    completion = tmp_path / "trainexec" / "training_complete.json"
    set_mtime_ns(completion, watch.since_nsec - 1)  # an earlier run's chief wrote it
    assert watch.completed_since() is False
    set_mtime_ns(completion, watch.since_nsec)
    assert watch.completed_since() is True
    assert watch.finished() == set()  # the chief's completion is not a finished record

