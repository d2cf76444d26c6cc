"""Estimator.predict's loop (trainexec.estimator_engine.prediction.run_prediction),
called directly on a native Estimator: single examples across batches or whole batches,
a Tensor's rows, scalars that cannot be split, the spec's prediction hooks, the
checkpoint it restores (given, latest, or none with a warning), and the warning for an
input that never ends."""

import itertools
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.estimator_engine.prediction import run_prediction

pytestmark = pytest.mark.tf_line


class CountingHook(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        self.runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1


def make_estimator(tmp_path, predictions, hook=None):
    """A model with one variable w (initially 2.0, + 1 each training step) predicting
    `predictions(x, w)` for the feature x."""

    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", initializer=2.0)
        step = tf.compat.v1.train.get_global_step()
        loss = None if labels is None else tf.reduce_sum(labels)  # None when predicting
        return te.EstimatorSpec(
            mode, predictions=predictions(features["x"], w), loss=loss,
            train_op=tf.group(tf.compat.v1.assign_add(w, 1.0),
                              tf.compat.v1.assign_add(step, 1)),
            prediction_hooks=[hook] if hook else None)

    return te.Estimator(model_fn, model_dir=str(tmp_path))


def five_in_batches_of_two():
    """x = 1 to 5 in batches [1, 2], [3, 4], [5]."""
    x = np.arange(1.0, 6.0, dtype=np.float32).reshape(5, 1)
    return tf.data.Dataset.from_tensor_slices({"x": x}).batch(2)


def test_single_examples_run_across_the_batches_in_order_and_warn_without_a_checkpoint(
        tmp_path, no_tf_config, caplog):
    estimator = make_estimator(tmp_path, lambda x, w: {"x": x, "y": x * w})
    with caplog.at_level(logging.WARNING):
        got = list(run_prediction(estimator, five_in_batches_of_two, None, [], None, True))
    # No checkpoint: w keeps its initial 2.0, so y = 2x.
    assert [float(row["x"][0]) for row in got] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert [float(row["y"][0]) for row in got] == [2.0, 4.0, 6.0, 8.0, 10.0]
    assert all(row["y"].shape == (1,) for row in got)  # one example's row, batch dim gone
    assert "Could not find a trained model in model_dir" in caplog.text


def test_whole_batches_and_the_specs_prediction_hooks_run_once_per_batch(tmp_path,
                                                                          no_tf_config):
    hook = CountingHook()
    estimator = make_estimator(tmp_path, lambda x, w: {"y": x * w}, hook)
    batches = list(run_prediction(estimator, five_in_batches_of_two, ["y"], [], None,
                                  False))
    assert [batch["y"].ravel().tolist() for batch in batches] == [[2.0, 4.0], [6.0, 8.0],
                                                                 [10.0]]
    assert hook.runs == 3  # 5 examples in batches of 2: three runs


def test_a_tensor_yields_its_rows_and_a_scalar_only_whole(tmp_path, no_tf_config):
    rows = make_estimator(tmp_path / "rows", lambda x, w: x * w)
    assert [row.tolist() for row in run_prediction(
        rows, five_in_batches_of_two, None, [], None, True)] == [[2.0], [4.0], [6.0],
                                                                 [8.0], [10.0]]
    total = make_estimator(tmp_path / "total", lambda x, w: tf.reduce_sum(x * w))
    with pytest.raises(ValueError, match="the prediction is a scalar, with no batch "
                       "dimension to split; pass yield_single_examples=False"):
        next(run_prediction(total, five_in_batches_of_two, None, [], None, True))
    # Whole batches: 2 * (1 + 2), 2 * (3 + 4), 2 * 5.
    assert list(run_prediction(total, five_in_batches_of_two, None, [], None, False)) == [
        6.0, 14.0, 10.0]
    named = make_estimator(tmp_path / "named", lambda x, w: {
        "y": x * w, "total": tf.reduce_sum(x)})
    with pytest.raises(ValueError, match="prediction 'total' is a scalar"):
        next(run_prediction(named, five_in_batches_of_two, None, [], None, True))


def test_the_given_checkpoint_is_restored_else_the_latest(tmp_path, no_tf_config):
    estimator = make_estimator(tmp_path, lambda x, w: x * w)

    def train_input_fn():
        return tf.data.Dataset.from_tensors(({"x": [[1.0]]}, [[0.0]])).repeat()

    estimator.train(train_input_fn, steps=1)  # w: 2 -> 3
    first = estimator.latest_checkpoint()
    estimator.train(train_input_fn, steps=1)  # w: 3 -> 4
    assert os.path.basename(estimator.latest_checkpoint()) == "model.ckpt-2"

    def one():
        return tf.data.Dataset.from_tensors({"x": [[1.0]]})

    assert next(run_prediction(estimator, one, None, [], None, True)).tolist() == [4.0]
    assert next(run_prediction(estimator, one, None, [], first, True)).tolist() == [3.0]


def test_an_input_that_never_ends_is_warned_about_and_predicted_again_and_again(
        tmp_path, no_tf_config, caplog):
    estimator = make_estimator(tmp_path, lambda x, w: x * w)

    def constant_input_fn():  # features without a dataset: nothing makes them end
        return {"x": tf.constant([[1.5]])}

    with caplog.at_level(logging.WARNING):
        got = list(itertools.islice(
            run_prediction(estimator, constant_input_fn, None, [], None, True), 4))
    assert [row.tolist() for row in got] == [[3.0]] * 4  # 1.5 * 2, four times
    assert "Input graph does not use tf.data.Dataset or contain a QueueRunner" in (
        caplog.text)
