"""Bad input to trainexec.estimator gets tf.estimator's exception types, with words
naming the field and the fix, before anything is written."""

import os

import pytest
import tensorflow as tf

import trainexec.estimator as te
from engine_models import make_model_fn, train_input_fn

pytestmark = pytest.mark.tf_line


def good_model_fn(features, labels, mode):
    del features, labels, mode


@pytest.mark.parametrize("model_fn, params, error, words", [
    (lambda labels, mode: None, None, ValueError, "must include a `features` argument"),
    (lambda features, labels, mode, extra: None, None, ValueError, "cannot fill: extra"),
    (good_model_fn, {"lr": 1}, ValueError, "no `params` argument"),
    ("not callable", None, TypeError, "must be callable"),
])
def test_model_fn_signature_rows(tmp_path, no_tf_config, model_fn, params, error, words):
    with pytest.raises(error, match=words):
        te.Estimator(model_fn, model_dir=str(tmp_path), params=params)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("build, error, words", [
    (lambda loss, op: te.EstimatorSpec("train", loss=loss), ValueError, "Missing train_op"),
    (lambda loss, op: te.EstimatorSpec("train", train_op=op), ValueError, "Missing loss"),
    (lambda loss, op: te.EstimatorSpec("eval"), ValueError, "Missing loss"),
    (lambda loss, op: te.EstimatorSpec("infer"), ValueError, "Missing predictions"),
    (lambda loss, op: te.EstimatorSpec("fit", loss=loss), ValueError, "`mode` .'fit'."),
    (lambda loss, op: te.EstimatorSpec("eval", loss=tf.ones([3])), ValueError,
     "Loss must be scalar"),
    (lambda loss, op: te.EstimatorSpec("eval", loss=1.0), TypeError, "loss must be Tensor"),
    (lambda loss, op: te.EstimatorSpec("eval", loss=loss, eval_metric_ops={"a": loss}),
     TypeError, r"must be \(metric_value, update_op\) tuples"),
    (lambda loss, op: te.EstimatorSpec("eval", loss=loss, training_hooks=[object()]),
     TypeError, "SessionRunHook"),
    (lambda loss, op: te.EstimatorSpec("eval", loss=loss, scaffold=tf.compat.v1.train.Scaffold(
        saver=tf.train.Checkpoint())), ValueError, "KerasTrainer"),
    (lambda loss, op: te.EstimatorSpec("infer", predictions={"p": loss},
                                       export_outputs={"x": loss}), TypeError, "ExportOutput"),
])
def test_estimator_spec_rows(build, error, words):
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(error, match=words):
            build(loss, tf.no_op())


def test_estimator_spec_refuses_a_tensor_of_another_graph():
    with tf.Graph().as_default():
        other = tf.constant(1.0)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="from the default graph"):
            te.EstimatorSpec("eval", loss=other)


def test_estimator_argument_rows(tmp_path, no_tf_config):
    model_fn = make_model_fn(te)
    with pytest.raises(ValueError, match="differ"):
        te.Estimator(model_fn, model_dir=str(tmp_path / "a"),
                     config=te.RunConfig(model_dir=str(tmp_path / "b")))
    estimator = te.Estimator(model_fn, model_dir=str(tmp_path), params={"lr": 0.1})
    with pytest.raises(ValueError, match="not both"):
        estimator.train(train_input_fn, steps=1, max_steps=2)
    with pytest.raises(ValueError, match="`steps` must be"):
        estimator.train(train_input_fn, steps=0)
    with pytest.raises(TypeError, match="SessionRunHook"):
        estimator.train(train_input_fn, hooks=[object()], steps=1)
    with pytest.raises(TypeError, match="input_fn .* returned"):
        estimator.train(lambda: [1, 2], steps=1)
    assert os.listdir(tmp_path) == []  # nothing was written
    with pytest.raises(ValueError, match="no checkpoint"):
        estimator.export_saved_model(str(tmp_path / "export"), lambda: None)
    with pytest.raises(ValueError, match="PREDICT"):
        estimator.export_saved_model(str(tmp_path / "export"), lambda: None,
                                     experimental_mode="train")
