"""Every MultiWorkerMirroredStrategy task resumes from the same checkpoint
(trainexec.keras.fit.restore_point): the highest step any task sees, waited for where a
client cache hides it."""

from __future__ import annotations

import pytest
import tensorflow as tf

from trainexec.records import checkpoints
from trainexec.keras.fit.restore_point import agreed_checkpoint, gather_steps

pytestmark = [pytest.mark.keras, pytest.mark.tf_line]


def _save(directory, step):
    checkpoint = tf.train.Checkpoint(v=tf.Variable(float(step)))
    return checkpoint.write(str(directory / f"ckpt-{step}"))


class _Steps:
    """Stands in for the collective: the steps the other tasks report."""

    def __init__(self, *others):
        self.others = list(others)

    def __call__(self, strategy, mine):
        return [mine, *self.others]


def test_the_real_collective_gathers_each_replicas_step():
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # one task: one replica here
    assert gather_steps(strategy, 300) == [300]


def test_tasks_that_agree_restore_what_they_see(tmp_path):
    mine = checkpoints.CheckpointInfo.from_path(_save(tmp_path, 200))
    assert agreed_checkpoint(None, str(tmp_path), mine, "ckpt",
                             gather=_Steps(200, 100)) == mine
    assert agreed_checkpoint(None, str(tmp_path), None, "ckpt", gather=_Steps(0)) is None


def test_a_task_that_sees_an_older_checkpoint_waits_for_the_agreed_one(tmp_path):
    sleeps = []

    def sleep(secs):  # the chief's checkpoint shows up on the third look
        sleeps.append(secs)
        if len(sleeps) == 2:
            _save(tmp_path, 200)
    clock = iter(range(1000))
    agreed = agreed_checkpoint(None, str(tmp_path), None, "ckpt", gather=_Steps(200, 0),
                               sleep=sleep, now=lambda: next(clock), poll_secs=0.5)
    assert agreed == checkpoints.CheckpointInfo(str(tmp_path / "ckpt-200"), 200)
    assert len(sleeps) == 2


def test_an_agreed_checkpoint_that_never_shows_fails_naming_it_as_retryable(tmp_path):
    from trainexec.contract.exit_codes import PEER_LOST, classify

    clock = iter(range(0, 1000, 10))
    with pytest.raises(tf.errors.UnavailableError,
                       match=r"resumes from .*ckpt-300, which this task still does not see "
                       r"whole after 30s .*same shared directory") as raised:
        agreed_checkpoint(None, str(tmp_path), None, "ckpt", gather=_Steps(300),
                          wait_secs=30, sleep=lambda s: None, now=lambda: next(clock))
    assert classify(raised.value) == PEER_LOST  # retryable (170): the cache may expire
