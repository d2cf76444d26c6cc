"""Bad input to trainexec.estimator gets tf.estimator's exception types, with words
naming the field and the fix, before anything is written."""

import glob
import json
import os
import re
import time

import portpicker
import pytest
import tensorflow as tf

import trainexec.estimator as te
from engine_models import make_model_fn, train_input_fn

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.tf_line, pytest.mark.timed]


def good_model_fn(features, labels, mode):
    del features, labels, mode


@pytest.mark.parametrize("model_fn, params, error, words", [
    (lambda labels, mode: None, None, ValueError, "must include a `features` argument"),
    (lambda features, labels, mode, extra: None, None, ValueError, "cannot fill: extra"),
    (good_model_fn, {"lr": 1}, ValueError, "does not include params argument"),
    ("not callable", None, TypeError, "must be callable"),
    (None, None, ValueError, "model_fn must be provided to Estimator"),
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
        saver=object())), TypeError, "must save and restore checkpoints"),
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
    with pytest.raises(ValueError, match="set both in constructor and `RunConfig`, but with "
                                         "different values: .*/a.*/b"):
        te.Estimator(model_fn, model_dir=str(tmp_path / "a"),
                     config=te.RunConfig(model_dir=str(tmp_path / "b")))
    with pytest.raises(ValueError, match="an instance of `RunConfig`.*given: str"):
        te.Estimator(model_fn, config="NotARunConfig")
    estimator = te.Estimator(model_fn, model_dir=str(tmp_path), params={"lr": 0.1})
    with pytest.raises(ValueError, match="not both"):
        estimator.train(train_input_fn, steps=1, max_steps=2)
    assert os.listdir(tmp_path) == []  # nothing was written
    with pytest.raises(ValueError, match="Couldn't find trained model at .*train first"):
        estimator.export_saved_model(str(tmp_path / "export"), lambda: None)
    with pytest.raises(ValueError, match="PREDICT"):
        estimator.export_saved_model(str(tmp_path / "export"), lambda: None,
                                     experimental_mode="train")


def spec_fn(predictions=None, metrics=None, takes_labels=True):
    """A model_fn with the given predictions (a callable of nothing) and metrics."""

    def model_fn(features, labels, mode):
        step = tf.compat.v1.train.get_global_step()
        return te.EstimatorSpec(
            mode, loss=tf.constant(1.0), train_op=tf.compat.v1.assign_add(step, 1),
            predictions=predictions() if predictions else tf.constant([[1.0]]),
            eval_metric_ops={name: (tf.constant(1.0), tf.no_op()) for name in metrics or ()})

    if takes_labels:
        return model_fn
    return lambda features, mode: model_fn(features, None, mode)


def pair_input_fn():
    return {"x": tf.constant([[1.0]])}, tf.constant([[1.0]])


def ending_input_fn():
    return tf.data.Dataset.from_tensors({"x": [[1.0]]})


NO_CHECKPOINTS = te.RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None)
# (case, model_fn, RunConfig, what is done, error, tf.estimator's words, ours)
CALL_ROWS = [
    ("train steps=0", spec_fn(), None, lambda e: e.train(pair_input_fn, steps=0),
     ValueError, "Must specify steps > 0", "given: 0"),
    ("train steps=-1", spec_fn(), None, lambda e: e.train(pair_input_fn, steps=-1),
     ValueError, "Must specify steps > 0", "given: -1"),
    ("train max_steps=0", spec_fn(), None, lambda e: e.train(pair_input_fn, max_steps=0),
     ValueError, "Must specify max_steps > 0", "whole number of steps"),
    ("train steps='5'", spec_fn(), None, lambda e: e.train(pair_input_fn, steps="5"),
     ValueError, "Must specify steps > 0", "'5'"),
    ("train hooks", spec_fn(), None, lambda e: e.train(pair_input_fn, hooks=["NotAHook"]),
     TypeError, "must be a SessionRunHook", "'NotAHook'.*SessionRunHook instances"),
    ("train listeners", spec_fn(), None,
     lambda e: e.train(pair_input_fn, steps=1, saving_listeners=["not-a-listener"]),
     TypeError, "must be a list of CheckpointSaverListener", "subclass"),
    ("listeners without checkpoints", spec_fn(), NO_CHECKPOINTS,
     lambda e: e.train(pair_input_fn, steps=1,
                       saving_listeners=[te.CheckpointSaverListener()]),
     ValueError, "CheckpointSaverHook to use saving_listeners", "set one of them"),
    ("labels for a model_fn without labels", spec_fn(takes_labels=False), None,
     lambda e: e.train(pair_input_fn, steps=1),
     ValueError, "model_fn does not take labels", "return features only"),
    ("a model_fn returning no EstimatorSpec", lambda features, labels: "NotGood", None,
     lambda e: e.train(pair_input_fn, steps=1),
     ValueError, "model_fn should return an EstimatorSpec", "'NotGood'"),
    ("evaluate steps=0", spec_fn(), None, lambda e: e.evaluate(pair_input_fn, steps=0),
     ValueError, "Must specify steps > 0", "Estimator.evaluate"),
    ("evaluate hooks", spec_fn(), None,
     lambda e: e.evaluate(pair_input_fn, steps=1, hooks=[object()]),
     TypeError, "must be a SessionRunHook", "Estimator.evaluate"),
    ("a metric named global_step", spec_fn(metrics=["global_step"]), None,
     lambda e: e.evaluate(pair_input_fn, steps=1),
     ValueError, "Metric with name `global_step` is not allowed", "rename it"),
    ("a metric named loss", spec_fn(metrics=["loss"]), None,
     lambda e: e.evaluate(pair_input_fn, steps=1),
     ValueError, "Metric with name `loss` is not allowed", "rename it"),
    ("predict hooks", spec_fn(), None,
     lambda e: next(e.predict(ending_input_fn, hooks=["NotAHook"])),
     TypeError, "must be a SessionRunHook", "Estimator.predict"),
    ("predict_keys of one Tensor", spec_fn(), None,
     lambda e: next(e.predict(ending_input_fn, predict_keys=["y"])),
     ValueError, "predict_keys argument is not valid in case of non-dict predictions",
     "drop predict_keys"),
    ("predict_keys naming none", spec_fn(lambda: {"y1": tf.constant([[1.0]])}), None,
     lambda e: next(e.predict(ending_input_fn, predict_keys=["y3"])),
     ValueError, "Expected to run at least one output from", r"\['y3'\]"),
    ("predictions of two batch lengths",
     spec_fn(lambda: {"y1": tf.constant([[10.0]]), "y2": tf.constant([[12.0], [13.0]])}), None,
     lambda e: next(e.predict(ending_input_fn)),
     ValueError, "Batch length of predictions should be same", "y1 has 1, y2 has 2"),
    ("variables without a checkpoint", spec_fn(), None, lambda e: e.get_variable_names(),
     ValueError, "Could not find trained model in model_dir", "train first"),
    ("a variable without a checkpoint", spec_fn(), None, lambda e: e.get_variable_value("x"),
     ValueError, "Could not find trained model in model_dir", "train first"),
    ("tf.estimator 1's export_savedmodel", spec_fn(), None, lambda e: e.export_savedmodel,
     AttributeError, "Please use `export_saved_model`", "same arguments"),
]


@pytest.mark.parametrize("model_fn, config, act, error, words, guidance",
                         [row[1:] for row in CALL_ROWS], ids=[row[0] for row in CALL_ROWS])
def test_call_rows(tmp_path, no_tf_config, model_fn, config, act, error, words, guidance):
    estimator = te.Estimator(model_fn, model_dir=str(tmp_path), config=config)
    with pytest.raises(error, match=words) as raised:
        act(estimator)
    assert re.search(guidance, str(raised.value)), raised.value
    assert not glob.glob(str(tmp_path / "model.ckpt-*"))


def test_a_subclass_adds_but_does_not_override(tmp_path, no_tf_config):
    class Predicting(te.Estimator):
        def predict(self, input_fn, predict_keys=None, hooks=None):
            return []

    class Adding(te.Estimator):
        def predict_proba(self, input_fn):
            return []

        def latest_checkpoint(self):  # tf.estimator allowed this one (and model_fn)
            return None

    with pytest.raises(ValueError, match="cannot override members of Estimator: Predicting "
                                         "overrides predict.*wrap the Estimator"):
        Predicting(spec_fn(), model_dir=str(tmp_path))
    assert Adding(spec_fn(), model_dir=str(tmp_path)).predict_proba(None) == []


def test_training_on_an_evaluator_or_ps_is_refused(tmp_path, monkeypatch):
    for task in ("evaluator", "ps"):
        monkeypatch.setenv("TF_CONFIG", json.dumps({
            "cluster": {"chief": ["localhost:1"], "ps": ["localhost:2"]},
            "task": {"type": task, "index": 0}}))
        estimator = te.Estimator(spec_fn(), model_dir=str(tmp_path))
        with pytest.raises(ValueError, match=f"on a {task} task.*train_and_evaluate"):
            estimator.train(pair_input_fn, steps=1)


def test_a_task_whose_server_is_not_running_fails_at_once(tmp_path, monkeypatch):
    port = portpicker.pick_unused_port()
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": [f"localhost:{port}"], "ps": ["localhost:1"]},
        "task": {"type": "chief", "index": 0}}))
    estimator = te.Estimator(spec_fn(), model_dir=str(tmp_path))
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=f"nothing listens at this task's address "
                                           f"grpc://localhost:{port}.*start the task's"):
        estimator.train(pair_input_fn, steps=1)
    assert time.monotonic() - started < 60
