"""trainexec/keras/fit/summaries.py: `TrainingSummaries`, the progress sink that writes each
report as TensorBoard scalars at its training step directly under `log_dir`, read back
with TensorBoard's reader; what it leaves of a user's own summary writer and `record_if`;
and `close()`, which releases the event file (a later report opens a new one). Its use
in a whole KerasTrainer run: tests/test_keras_fit_progress.py."""

import pytest
import tensorflow as tf

from event_files import scalars
from test_keras_fit_progress import _open_files_under
from trainexec.keras.fit.progress import Progress
from trainexec.keras.fit.summaries import TrainingSummaries

pytestmark = [pytest.mark.tf_line, pytest.mark.keras]


def report(step, metrics, steps_per_sec=None, learning_rate=None, max_steps=40):
    """A progress report as `ProgressTracker` makes them (values exact in float32)."""
    left = None if not steps_per_sec else (max_steps - step) / steps_per_sec
    return Progress(step, max_steps, metrics, steps_per_sec, left, learning_rate)


def event_files_in(directory):
    return sorted(path.name for path in directory.glob("events.out.tfevents.*"))


def test_each_report_is_written_at_its_step_under_log_dir_and_readable_before_close(
        tmp_path):
    log_dir = tmp_path / "model"  # made when first written
    summaries = TrainingSummaries(log_dir)
    try:
        summaries(report(20, {"loss": 0.5, "mae": 0.75}, steps_per_sec=12.5,
                         learning_rate=0.125))
        # Flushed at once: TensorBoard shows the curve while training goes on.
        assert scalars(log_dir) == {"loss": {20: 0.5}, "mae": {20: 0.75},
                                    "steps_per_sec": {20: 12.5},
                                    "learning_rate": {20: 0.125}}
        summaries(report(40, {"loss": 0.25, "mae": 0.5}, steps_per_sec=10.0,
                         learning_rate=0.0625))
    finally:
        summaries.close()
    # Each value at its own step; max_steps and the time left are not curves.
    assert scalars(log_dir) == {"loss": {20: 0.5, 40: 0.25}, "mae": {20: 0.75, 40: 0.5},
                                "steps_per_sec": {20: 12.5, 40: 10.0},
                                "learning_rate": {20: 0.125, 40: 0.0625}}
    assert len(event_files_in(log_dir)) == 1
    assert [p.name for p in log_dir.iterdir()] == event_files_in(log_dir)  # no subdirs


def test_without_a_rate_or_a_learning_rate_schedule_only_the_metrics_are_written(tmp_path):
    summaries = TrainingSummaries(str(tmp_path))  # a str log_dir as well as a path
    try:
        summaries(report(10, {"loss": 2.0}))  # no time passed, a constant learning rate
    finally:
        summaries.close()
    assert scalars(tmp_path) == {"loss": {10: 2.0}}


def test_it_writes_though_a_users_tensorboard_turned_recording_off_and_leaves_it_off(
        tmp_path):
    users = tf.summary.create_file_writer(str(tmp_path / "users"))
    summaries = TrainingSummaries(tmp_path / "model")
    try:
        with users.as_default(), tf.summary.record_if(False):
            summaries(report(30, {"loss": 0.5}))
            # The user's setting and writer are in force again afterwards.
            assert not bool(tf.summary.should_record_summaries())
            assert not bool(tf.summary.scalar("skipped", 1.0, step=30))
            with tf.summary.record_if(True):
                assert bool(tf.summary.scalar("epoch_loss", 0.75, step=30))
        users.flush()
    finally:
        summaries.close()
        users.close()
    assert scalars(tmp_path / "model") == {"loss": {30: 0.5}}
    assert scalars(tmp_path / "users") == {"epoch_loss": {30: 0.75}}


def test_close_releases_the_event_file_and_a_later_report_opens_a_new_one(tmp_path):
    log_dir = tmp_path / "model"
    summaries = TrainingSummaries(log_dir)
    summaries.close()  # nothing written yet: nothing to close, nothing made
    assert not log_dir.exists()
    summaries(report(10, {"loss": 0.5}))
    assert len(_open_files_under(log_dir)) == 1  # held open between reports
    summaries.close()
    assert _open_files_under(log_dir) == []
    summaries.close()  # twice is harmless
    summaries(report(20, {"loss": 0.25}))
    summaries.close()
    assert _open_files_under(log_dir) == []
    assert len(event_files_in(log_dir)) == 2
    assert scalars(log_dir) == {"loss": {10: 0.5, 20: 0.25}}
