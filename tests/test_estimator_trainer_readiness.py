"""A non-chief worker re-checks the chief's model every poll_secs, not every 30 s."""

import logging

import pytest
import tensorflow as tf

from trainexec.estimator_trainer.readiness import model_readiness_checks_every

pytestmark = pytest.mark.tf_line

SessionManager = tf.compat.v1.train.SessionManager
TF_DEFAULT = 30


def recheck_secs(*args, **kwargs) -> float:
    return SessionManager(*args, **kwargs)._recovery_wait_secs


def test_inside_the_block_new_session_managers_recheck_every_secs():
    assert recheck_secs() == TF_DEFAULT
    with model_readiness_checks_every(0.5):
        assert recheck_secs() == 0.5
        assert recheck_secs(recovery_wait_secs=7) == 7  # a creator's choice stands
        assert recheck_secs(None, None, None, None, 9) == 9  # also given by position
    assert recheck_secs() == TF_DEFAULT


def test_tensorflow_default_is_restored_when_the_block_raises():
    with pytest.raises(RuntimeError):
        with model_readiness_checks_every(2):
            raise RuntimeError("training failed")
    assert recheck_secs() == TF_DEFAULT


@pytest.mark.parametrize("secs", [0, -1])
def test_interval_must_be_positive(secs):
    with pytest.raises(ValueError, match=f"secs is {secs}"):
        with model_readiness_checks_every(secs):
            pass


def test_overlapping_blocks_in_two_threads_restore_the_default_when_both_end():
    import threading

    first_inside, second_done = threading.Event(), threading.Event()
    seen_in_first = []

    def first():
        with model_readiness_checks_every(1):
            first_inside.set()
            second_done.wait(10)
            seen_in_first.append(recheck_secs())

    thread = threading.Thread(target=first)
    thread.start()
    first_inside.wait(10)
    with model_readiness_checks_every(2):
        assert recheck_secs() == 1  # the first active block's interval
    second_done.set()
    thread.join(10)
    assert seen_in_first == [1]  # the second block's end kept the patch for the first
    assert recheck_secs() == TF_DEFAULT


def test_tensorflows_waiting_line_is_logged_once_per_interval_inside_the_block(caplog):
    from tensorflow.python.platform import tf_logging

    from trainexec.estimator_trainer import readiness

    def waiting_lines():
        return [r for r in caplog.records if r.getMessage().startswith("Waiting for model")]

    caplog.set_level(logging.INFO, logger="tensorflow")
    readiness._limiter._last = None
    with model_readiness_checks_every(1):
        for _ in range(5):  # five checks a second apart: one line
            tf_logging.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s", "x")
        tf_logging.info("Something else")
    assert len(waiting_lines()) == 1
    assert any(r.getMessage() == "Something else" for r in caplog.records)
    tf_logging.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s", "y")
    assert len(waiting_lines()) == 2  # outside the block every line passes again
