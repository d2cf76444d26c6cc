"""DNNLinearCombined*: both parts under tf.estimator's names, each with its optimizer
(the DNN's counting the step), either part alone, refusals; on the 2.15 line, a
tf.estimator checkpoint read to the same numbers and resumed alike."""

import shutil

import numpy as np
import pytest
import tensorflow as tf

import canned_toy as toy
import trainexec.estimator as te
from trainexec.estimator_engine.canned.optimizers import keras2_optimizers

pytestmark = pytest.mark.tf_line

DNN = ["dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/bias", "dnn/logits/kernel",
       "dnn/logits/bias"]
LINEAR = ["linear/linear_model/bias_weights", "linear/linear_model/c/weights"]


def test_wide_and_deep_trains_both_parts_under_tf_estimators_names(tmp_path):
    x, c, _ = toy.columns()
    model = te.DNNLinearCombinedClassifier(
        str(tmp_path), linear_feature_columns=[c], dnn_feature_columns=[x],
        dnn_hidden_units=[3])
    model.train(toy.input_fn(), steps=1)
    start = {name: tf.train.load_variable(str(tmp_path), name) for name in DNN + LINEAR}
    model.train(toy.input_fn(), steps=4)
    for name, value in start.items():
        assert not np.array_equal(tf.train.load_variable(str(tmp_path), name), value), name
    assert tf.train.load_variable(str(tmp_path), "global_step") == 5
    expected = set(DNN + LINEAR) | {"global_step"}
    if keras2_optimizers():
        expected |= set(toy.adagrad(DNN)) | set(toy.ftrl(LINEAR, with_iter=True))
    assert set(toy.variables(str(tmp_path))) == expected


@pytest.mark.parametrize("part", ["linear", "dnn"])
def test_either_part_alone_is_a_model(tmp_path, part):
    x, c, embedding = toy.columns()
    kwargs = ({"linear_feature_columns": [x, c]} if part == "linear" else
              {"dnn_feature_columns": [x, embedding], "dnn_hidden_units": [4]})
    model = te.DNNLinearCombinedRegressor(str(tmp_path), **kwargs)
    model.train(toy.input_fn("regression"), steps=3)
    assert tf.train.load_variable(str(tmp_path), "global_step") == 3
    assert all(name.startswith((part, "global_step", "training"))
               for name in toy.variables(str(tmp_path)))


def test_the_estimator_form_takes_a_head(tmp_path):
    x, c, _ = toy.columns()
    model = te.DNNLinearCombinedEstimator(
        te.RegressionHead(label_dimension=1), str(tmp_path), linear_feature_columns=[c],
        dnn_feature_columns=[x], dnn_hidden_units=[2], dnn_optimizer="SGD",
        linear_optimizer=lambda: tf.compat.v1.train.FtrlOptimizer(0.1))
    model.train(toy.input_fn("regression"), steps=2)
    assert "average_loss" in model.evaluate(toy.input_fn("regression"), steps=1)


@pytest.mark.parametrize("kwargs, words", [
    ({}, "Either linear_feature_columns or dnn_feature_columns must be defined."),
    ({"dnn_feature_columns": "X"},
     "dnn_hidden_units must be defined when dnn_feature_columns is specified."),
    ({"dnn_feature_columns": "X", "dnn_hidden_units": [0]}, "must hold positive ints"),
    ({"linear_feature_columns": "C", "linear_optimizer": "Lion"},
     "Unsupported optimizer name: Lion."),
    ({"linear_feature_columns": "C", "linear_sparse_combiner": "max"},
     "linear_sparse_combiner must be one of"),
    ({"dnn_feature_columns": "C", "dnn_hidden_units": [2]},
     "Items of feature_columns must be a DenseColumn"),
], ids=["nothing", "no-units", "zero-units", "optimizer", "combiner", "categorical"])
def test_bad_arguments_are_refused_before_anything_is_written(tmp_path, kwargs, words):
    x, c, _ = toy.columns()
    given = {key: ([x] if value == "X" else [c] if value == "C" else value)
             for key, value in kwargs.items()}
    with pytest.raises(ValueError) as raised:
        te.DNNLinearCombinedClassifier(str(tmp_path / "m"), **given)
    assert words in str(raised.value)
    assert not toy.written(str(tmp_path / "m"))


@pytest.mark.estimator
def test_a_tf_estimator_checkpoint_evaluates_the_same_and_resumes_alike(tmp_path):
    estimator = toy.tf_estimator()
    x, c, embedding = toy.columns()
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    kwargs = {"linear_feature_columns": [x, c], "dnn_feature_columns": [x, embedding],
              "dnn_hidden_units": [5, 2]}
    reference = estimator.DNNLinearCombinedClassifier(theirs, **kwargs)
    reference.train(toy.input_fn(), steps=8)
    shutil.copytree(theirs, ours)
    model = te.DNNLinearCombinedClassifier(ours, **kwargs)
    expected = reference.evaluate(toy.input_fn(), steps=4)
    for key, value in model.evaluate(toy.input_fn(), steps=4).items():
        assert value == pytest.approx(expected[key], abs=1e-5), key
    reference.train(toy.input_fn(seed=1), steps=4)
    model.train(toy.input_fn(seed=1), steps=4)
    assert toy.variables(ours) == toy.variables(theirs)
    for name in toy.variables(theirs):
        np.testing.assert_array_equal(tf.train.load_variable(ours, name),
                                      tf.train.load_variable(theirs, name), err_msg=name)
