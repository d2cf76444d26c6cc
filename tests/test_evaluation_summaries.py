"""trainexec/evaluation/summaries.py: `EvalSummaries` writes each evaluated checkpoint's
scalar metrics at its training step, read back with TensorBoard's reader; a pass that
evaluated nothing writes nothing; after `close()` a later evaluation opens a new event
file; summaries switched off around it, or a user's default writer, change nothing;
a directory it cannot write is a logged warning, never an error, and is tried again.
`eval_summary_dir` is the Estimator's layout. The Keras sidecar's own TensorBoard
summaries: tests/test_keras_evaluate_sidecar.py."""

import logging

import numpy as np
import pytest
import tensorflow as tf

from event_files import scalars
from trainexec.evaluation.one_pass import EvalResult, EvalStatus
from trainexec.evaluation.summaries import EvalSummaries, eval_summary_dir

pytestmark = pytest.mark.tf_line


def evaluated(step, **metrics):
    return EvalResult(EvalStatus.EVALUATED, {**metrics, "global_step": step},
                      f"/model/ckpt-{step}")


def event_files_in(directory):
    return sorted(path.name for path in directory.glob("events.out.tfevents.*"))


def test_the_directory_is_eval_or_eval_and_the_evaluations_name_under_model_dir(tmp_path):
    assert eval_summary_dir(tmp_path) == str(tmp_path / "eval")
    assert eval_summary_dir(str(tmp_path), "holdout") == str(tmp_path / "eval_holdout")
    assert eval_summary_dir(str(tmp_path), "") == str(tmp_path / "eval")


def test_each_evaluation_writes_its_scalar_metrics_at_its_training_step(tmp_path):
    log_dir = tmp_path / "model" / "eval"  # made when first written
    summaries = EvalSummaries(log_dir)
    try:
        assert summaries.after_eval(evaluated(
            np.int64(40), loss=np.float32(0.25), auc=tf.constant(0.75),
            label="not a number", per_class=[0.1, 0.2])) is True
        # Readable at once, before close: the evaluator runs on for hours.
        assert scalars(log_dir) == {"loss": {40: 0.25}, "auc": {40: 0.75}}
        assert summaries.after_eval(evaluated(80, loss=0.125, auc=1.0)) is True
    finally:
        summaries.close()
    # Every scalar at its step; global_step is the step, not a curve of its own.
    assert scalars(log_dir) == {"loss": {40: 0.25, 80: 0.125}, "auc": {40: 0.75, 80: 1.0}}
    assert len(event_files_in(log_dir)) == 1


@pytest.mark.parametrize("status", [EvalStatus.NO_NEW_CHECKPOINT,
                                    EvalStatus.MISSING_CHECKPOINT])
def test_a_pass_that_evaluated_nothing_writes_nothing_and_does_not_stop(tmp_path, status):
    summaries = EvalSummaries(tmp_path / "eval")
    assert summaries.after_eval(EvalResult(status)) is True
    summaries.close()
    assert not (tmp_path / "eval").exists()


def test_after_close_a_later_evaluation_opens_a_new_event_file(tmp_path):
    summaries = EvalSummaries(tmp_path / "eval")
    summaries.close()  # nothing open yet: nothing to do
    summaries.after_eval(evaluated(10, loss=0.5))
    summaries.close()
    summaries.close()  # twice is harmless
    assert len(event_files_in(tmp_path / "eval")) == 1
    summaries.after_eval(evaluated(20, loss=0.25))
    summaries.close()
    assert len(event_files_in(tmp_path / "eval")) == 2
    assert scalars(tmp_path / "eval") == {"loss": {10: 0.5, 20: 0.25}}


def test_summaries_switched_off_around_it_or_a_users_writer_change_nothing(tmp_path):
    users = tf.summary.create_file_writer(str(tmp_path / "train"))
    summaries = EvalSummaries(tmp_path / "eval")
    try:
        with users.as_default(), tf.summary.record_if(False):
            summaries.after_eval(evaluated(30, loss=0.5))
            # The user's writer is the default again afterwards.
            with tf.summary.record_if(True):
                tf.summary.scalar("train_loss", 0.75, step=30)
        users.flush()
    finally:
        summaries.close()
        users.close()
    assert scalars(tmp_path / "eval") == {"loss": {30: 0.5}}
    assert scalars(tmp_path / "train") == {"train_loss": {30: 0.75}}


def test_a_directory_it_cannot_write_is_a_warning_and_is_tried_again(tmp_path, caplog):
    (tmp_path / "model").write_text("a file where model_dir should be")
    log_dir = tmp_path / "model" / "eval"
    summaries = EvalSummaries(log_dir)
    with caplog.at_level(logging.WARNING, logger="trainexec.evaluation.summaries"):
        assert summaries.after_eval(evaluated(10, loss=0.5)) is True  # goes on
    (record,) = [r for r in caplog.records if r.name == "trainexec.evaluation.summaries"]
    assert record.levelno == logging.WARNING and record.exc_info is not None
    assert record.getMessage() == f"Could not write the evaluation summaries under {log_dir}"
    # Once the directory can be made, the next evaluation is written.
    (tmp_path / "model").unlink()
    try:
        summaries.after_eval(evaluated(20, loss=0.25))
    finally:
        summaries.close()
    assert scalars(log_dir) == {"loss": {20: 0.25}}
