"""LinearClassifier, LinearRegressor, LinearEstimator: tf.estimator's variable names,
real training on dense and categorical columns, the sparse combiners, refusals before
anything is written; on the 2.15 line, a tf.estimator checkpoint read to the same
numbers, resumed alike, and ours read by tf.estimator."""

import shutil

import numpy as np
import pytest
import tensorflow as tf

import canned_toy as toy
import trainexec.estimator as te
from trainexec.estimator_engine.canned.optimizers import keras2_optimizers

pytestmark = pytest.mark.tf_line

MODEL = ["linear/linear_model/bias_weights", "linear/linear_model/c/weights",
         "linear/linear_model/x/weights"]


def test_a_linear_classifier_writes_tf_estimators_names_and_learns(tmp_path):
    x, c, _ = toy.columns()
    model = te.LinearClassifier([x, c], model_dir=str(tmp_path))
    model.train(toy.input_fn(), steps=1)
    first = model.evaluate(toy.input_fn(), steps=4)
    model.train(toy.input_fn(), steps=150)
    last = model.evaluate(toy.input_fn(), steps=4)
    assert last["average_loss"] < first["average_loss"] and last["accuracy"] >= 0.8
    names = toy.variables(str(tmp_path))
    assert names["linear/linear_model/c/weights"] == (4, 1)
    expected = set(MODEL) | {"global_step"}
    if keras2_optimizers():
        expected |= set(toy.ftrl(MODEL))
    assert set(names) == expected
    assert set(last) == {"accuracy", "accuracy_baseline", "auc", "auc_precision_recall",
                         "average_loss", "label/mean", "loss", "precision",
                         "prediction/mean", "recall", "global_step"}


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_a_linear_regressor_takes_each_sparse_combiner(tmp_path, combiner):
    x, c, _ = toy.columns()
    model = te.LinearRegressor([x, c], model_dir=str(tmp_path), label_dimension=1,
                               sparse_combiner=combiner, optimizer=None,
                               weight_column="w")
    model.train(toy.input_fn("regression"), steps=5)
    predictions = list(model.predict(toy.input_fn("regression", repeat=False)))
    assert len(predictions) == toy.ROWS and predictions[0]["predictions"].shape == (1,)


def test_a_linear_estimator_with_a_multi_label_head(tmp_path):
    x, c, _ = toy.columns()
    model = te.LinearEstimator(te.MultiLabelHead(3), [x, c], model_dir=str(tmp_path),
                               optimizer="SGD")
    labels = (np.arange(toy.ROWS * 3).reshape(toy.ROWS, 3) % 2).astype(np.int64)
    model.train(toy.input_fn(labels=labels), steps=3)
    assert toy.variables(str(tmp_path))["linear/linear_model/bias_weights"] == (3,)
    assert "auc" in model.evaluate(toy.input_fn(labels=labels), steps=1)


@pytest.mark.parametrize("kwargs, words", [
    ({"sparse_combiner": "max"}, "sparse_combiner must be one of mean, sqrtn, sum"),
    ({"n_classes": 1}, "n_classes must be > 2: 1."),
    ({"optimizer": "Adadelta"}, "Unsupported optimizer name: Adadelta."),
    ({"feature_columns": ["x"]}, "Items of feature_columns must be either a "
                                 "DenseColumn or CategoricalColumn"),
    ({"feature_columns": []}, "feature_columns must not be empty"),
], ids=["combiner", "one-class", "optimizer", "string-column", "no-columns"])
def test_bad_arguments_are_refused_before_anything_is_written(tmp_path, kwargs, words):
    x, c, _ = toy.columns()
    with pytest.raises(ValueError) as raised:
        te.LinearClassifier(**{"feature_columns": [x, c], **kwargs},
                            model_dir=str(tmp_path / "m"))
    assert words in str(raised.value)
    assert not toy.written(str(tmp_path / "m"))


def test_labels_outside_the_vocabulary_stop_the_first_step(tmp_path):
    x, _, _ = toy.columns()
    model = te.LinearClassifier([x], model_dir=str(tmp_path), label_vocabulary=["a", "b"])
    labels = np.array(["zebra", "a"] + ["a", "b"] * (toy.ROWS // 2 - 1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must be >= 0"):
        model.train(toy.input_fn(labels=labels), steps=1)


@pytest.mark.estimator
def test_checkpoints_cross_between_tf_estimator_and_trainexec(tmp_path):
    estimator = toy.tf_estimator()
    x, c, _ = toy.columns()
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    reference = estimator.LinearClassifier([x, c], model_dir=theirs)
    reference.train(toy.input_fn(), steps=10)
    shutil.copytree(theirs, ours)
    model = te.LinearClassifier([x, c], model_dir=ours)
    expected = reference.evaluate(toy.input_fn(), steps=4)
    for key, value in model.evaluate(toy.input_fn(), steps=4).items():
        assert value == pytest.approx(expected[key], abs=1e-5), key
    reference.train(toy.input_fn(seed=2), steps=4)
    model.train(toy.input_fn(seed=2), steps=4)
    for name in toy.variables(theirs):
        np.testing.assert_array_equal(tf.train.load_variable(ours, name),
                                      tf.train.load_variable(theirs, name), err_msg=name)
    # ours, trained further, read back by tf.estimator
    model.train(toy.input_fn(seed=3), steps=3)
    back = estimator.LinearClassifier([x, c], model_dir=ours)
    assert back.evaluate(toy.input_fn(), steps=4) == pytest.approx(
        model.evaluate(toy.input_fn(), steps=4), abs=1e-5)
