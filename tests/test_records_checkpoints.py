"""Finding the newest checkpoint: the state file read whole and as TensorFlow reads it,
never a cut-short state file taken for "no checkpoint", a listing when it stays
unreadable; telling complete checkpoints from half-written ones. Real checkpoints
written by `tf.train.CheckpointManager` in `tmp_path`."""

import logging
import os

import pytest
import tensorflow as tf

from trainexec.records import checkpoints
from trainexec.records.checkpoint_state import read_checkpoint_state
from trainexec.records.checkpoints import CheckpointInfo, latest_checkpoint, listed_checkpoints

pytestmark = pytest.mark.tf_line


def _save(directory, steps, keep=None):
    """Checkpoints at `steps` written by a CheckpointManager, as Keras and custom loops
    write them (a `checkpoint` state file naming them relative to `directory`)."""
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(directory),
                                         max_to_keep=keep)
    for s in steps:
        step.assign(s)
        manager.save(checkpoint_number=s)
    return manager


class Pauses(list):
    """A fake `sleep`: records each pause, then does what the test asks."""

    def __init__(self, on_pause=None):
        super().__init__()
        self._on_pause = on_pause

    def __call__(self, secs):
        self.append(secs)
        if self._on_pause is not None:
            self._on_pause(len(self))


def test_the_newest_checkpoint_is_what_tensorflow_finds(tmp_path):
    _save(tmp_path, [100, 200, 300], keep=2)
    found = latest_checkpoint(str(tmp_path))
    assert found == CheckpointInfo(str(tmp_path / "ckpt-300"), 300)
    assert found.path == tf.train.latest_checkpoint(str(tmp_path))
    state = read_checkpoint_state(str(tmp_path))
    assert state.kept == (str(tmp_path / "ckpt-200"), str(tmp_path / "ckpt-300"))


def test_no_state_file_is_no_checkpoint(tmp_path):
    assert latest_checkpoint(str(tmp_path)) is None
    assert latest_checkpoint(str(tmp_path / "not-there")) is None


def test_checkpoints_listed_without_a_state_file_are_found(tmp_path, caplog):
    # An NFS client that found the state file absent before the first save keeps saying
    # so for up to a minute; the checkpoints themselves are listed.
    _save(tmp_path, [100, 200])
    os.remove(tmp_path / "checkpoint")
    with caplog.at_level(logging.INFO, logger=checkpoints.__name__):
        found = latest_checkpoint(str(tmp_path), sleep=Pauses())
    assert found == CheckpointInfo(str(tmp_path / "ckpt-200"), 200)
    assert "a listing finds checkpoints" in caplog.text


def test_a_state_file_naming_a_checkpoint_whose_index_is_not_there_names_none(tmp_path):
    # As tf.train.latest_checkpoint: the state names model.ckpt-5, no such files.
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-5"\n')
    assert latest_checkpoint(str(tmp_path), sleep=Pauses()) is None


@pytest.mark.parametrize("cut", [22, 30, 45, 60])
def test_a_cut_short_state_file_is_never_no_checkpoint(tmp_path, caplog, cut):
    # TensorFlow's GCS client reads a rewritten state file at the length its stat
    # cache holds: 'model_checkpoint_path: "ckpt-300"\nall_mo' and the like.
    _save(tmp_path, [100, 200, 300])
    state_file = tmp_path / "checkpoint"
    state_file.write_text(state_file.read_text()[:cut])
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # what TensorFlow answers
    pauses = Pauses()
    with caplog.at_level(logging.WARNING, logger=checkpoints.__name__):
        found = latest_checkpoint(str(tmp_path), sleep=pauses)
    assert found == CheckpointInfo(str(tmp_path / "ckpt-300"), 300)
    assert len(pauses) == 3 and sum(pauses) < 2  # read again, briefly, then listed
    assert str(state_file) in caplog.text and "listing" in caplog.text


def test_a_state_file_read_again_once_it_is_whole(tmp_path):
    _save(tmp_path, [100, 200])
    state_file = tmp_path / "checkpoint"
    whole = state_file.read_text()
    state_file.write_text(whole[:30])

    def rewrite(pause):  # the next version is uploaded while the reader waits
        state_file.write_text(whole.replace("ckpt-200", "ckpt-100", 1))

    pauses = Pauses(rewrite)
    assert latest_checkpoint(str(tmp_path), sleep=pauses).path == str(tmp_path / "ckpt-100")
    assert len(pauses) == 1


def test_the_listing_takes_checkpoints_with_an_index_by_step(tmp_path):
    _save(tmp_path, [5, 40, 300])
    (tmp_path / "notes.index").write_text("")  # no step: not a checkpoint of a run
    assert [c.step for c in listed_checkpoints(str(tmp_path))] == [5, 40, 300]


def test_half_written_and_complete_checkpoints(tmp_path):
    _save(tmp_path, [10])
    prefix = str(tmp_path / "ckpt-10")
    assert checkpoints.is_complete(prefix)
    os.remove(prefix + ".index")
    assert checkpoints.incomplete_reason(prefix) == "missing ckpt-10.index"
