"""trainexec/records/completion.py: the chief's completion record under the model
directory, read back as it was written, a damaged one never taken for a record, an
earlier run's told apart by `max_steps`, and cleared for a new run. Real files in
`tmp_path`. (The chief writing it: tests/test_executor.py; the evaluator reading it:
tests/test_evaluation_loop.py.)"""

import json
import logging
import os
import time

import numpy as np
import pytest

from trainexec.records import layout
from trainexec.records.completion import (TrainingComplete, clear_training_complete,
                                          completion_path, read_training_complete,
                                          record_training_complete)

pytestmark = pytest.mark.any_line


def test_a_record_reads_back_as_written_where_the_docs_say(tmp_path):
    model_dir = tmp_path / "runs" / "model"  # not there yet: made
    written = record_training_complete(str(model_dir), "/ckpts/model.ckpt-1000",
                                       global_step=1000, max_steps=1000,
                                       wall_time=1763772000.5)
    path = model_dir / "trainexec" / "training_complete.json"
    assert completion_path(str(model_dir)) == str(path)
    assert json.loads(path.read_text()) == {
        "global_step": 1000, "checkpoint": "/ckpts/model.ckpt-1000", "max_steps": 1000,
        "finished_at": 1763772000.5}
    assert read_training_complete(str(model_dir)) == written == TrainingComplete(
        1000, "/ckpts/model.ckpt-1000", 1000, 1763772000.5)


def test_steps_read_from_tensors_are_recorded_as_plain_numbers(tmp_path):
    # A global step read from a variable is a numpy integer, which json cannot write.
    record_training_complete(str(tmp_path), None, global_step=np.int64(20),
                             max_steps=np.int32(20), wall_time=5.0)
    done = read_training_complete(str(tmp_path))
    assert (done.global_step, done.max_steps, done.checkpoint) == (20, 20, None)
    assert type(done.global_step) is int and type(done.max_steps) is int


def test_without_a_wall_time_the_record_is_stamped_now(tmp_path):
    before = time.time()
    done = record_training_complete(str(tmp_path), None, global_step=None, max_steps=None)
    assert before <= done.finished_at <= time.time()
    assert read_training_complete(str(tmp_path)).finished_at == done.finished_at


def test_no_record_and_no_model_dir_read_as_not_finished(tmp_path):
    assert read_training_complete(str(tmp_path)) is None
    assert read_training_complete(str(tmp_path / "never-made")) is None
    assert not (tmp_path / "never-made").exists()  # reading makes nothing


@pytest.mark.parametrize("text", [
    '{"global_step": 1000, "checkpoint": "/ckpts/mo',  # cut short mid-write
    "",
    '{"global_step": 1000, "max_steps": 1000}',  # no finished_at
    '{"global_step": 1000, "finished_at": "soon"}',
    '[1000, "/ckpts/model.ckpt-1000"]',
])
def test_a_damaged_record_is_named_once_and_taken_as_none(tmp_path, caplog, text):
    path = tmp_path / "trainexec" / "training_complete.json"
    path.parent.mkdir()
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger=layout.__name__):
        assert read_training_complete(str(tmp_path)) is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "completion record" in warnings[0] and str(path) in warnings[0]


def test_a_new_record_replaces_the_old_one_whole_and_leaves_no_temporary_file(tmp_path):
    record_training_complete(str(tmp_path), "/ckpts/model.ckpt-10", 10, 10, wall_time=1.0)
    record_training_complete(str(tmp_path), "/ckpts/model.ckpt-30", 30, None, wall_time=2.0)
    assert read_training_complete(str(tmp_path)) == TrainingComplete(
        30, "/ckpts/model.ckpt-30", None, 2.0)
    assert os.listdir(tmp_path / "trainexec") == ["training_complete.json"]


@pytest.mark.parametrize("recorded, asked, same_run", [
    (1000, 1000, True),
    (1000, 2000, False),  # an earlier run that trained to another max_steps
    (1000, None, True),   # the reader does not know: not refused
    (None, 1000, True),   # the chief trained without max_steps
    (None, None, True),
])
def test_a_record_matches_a_run_unless_both_name_different_max_steps(
        tmp_path, recorded, asked, same_run):
    record_training_complete(str(tmp_path), None, 1000, recorded, wall_time=1.0)
    assert read_training_complete(str(tmp_path)).matches(max_steps=asked) is same_run


@pytest.mark.tf_line  # removes through tf.io.gfile
def test_a_new_run_clears_the_record_and_clearing_nothing_is_no_error(tmp_path):
    clear_training_complete(str(tmp_path))  # nothing recorded yet
    clear_training_complete(str(tmp_path / "never-made"))
    record_training_complete(str(tmp_path), None, 10, 10, wall_time=1.0)
    clear_training_complete(str(tmp_path))
    assert read_training_complete(str(tmp_path)) is None
    assert os.listdir(tmp_path / "trainexec") == []
    record_training_complete(str(tmp_path), None, 20, 20, wall_time=2.0)  # and again
    assert read_training_complete(str(tmp_path)).global_step == 20
