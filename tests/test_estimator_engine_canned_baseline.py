"""Baseline*: learn the labels' average whatever the features, under tf.estimator's
variable name `baseline/bias`; refusals; on the 2.15 line, the same numbers from a
tf.estimator checkpoint."""

import shutil

import numpy as np
import pytest
import tensorflow as tf

import canned_toy as toy
import trainexec.estimator as te

pytestmark = pytest.mark.tf_line


def test_a_baseline_regressor_learns_the_labels_mean(tmp_path):
    model = te.BaselineRegressor(model_dir=str(tmp_path), optimizer="SGD")
    labels = np.full((toy.ROWS, 1), 3.0, np.float32)
    model.train(toy.input_fn(labels=labels), steps=300)
    assert tf.train.load_variable(str(tmp_path), "baseline/bias") == pytest.approx(
        [3.0], abs=0.05)
    predictions = [p["predictions"][0] for p in model.predict(
        toy.input_fn(labels=labels, repeat=False))]
    assert len(predictions) == toy.ROWS and predictions[0] == pytest.approx(3.0, abs=0.05)


def test_a_baseline_classifier_predicts_the_class_distribution(tmp_path):
    model = te.BaselineClassifier(model_dir=str(tmp_path), n_classes=3,
                                  label_vocabulary=["a", "b", "c"], weight_column="w")
    labels = np.array(["a", "a", "b", "c"] * (toy.ROWS // 4))
    model.train(toy.input_fn(labels=labels, batch=64), steps=200)
    probabilities = next(iter(model.predict(
        toy.input_fn(labels=labels, repeat=False))))["probabilities"]
    assert probabilities[0] > probabilities[1] and probabilities[0] > probabilities[2]
    assert toy.variables(str(tmp_path))["baseline/bias"] == (3,)


def test_the_estimator_form_takes_a_head(tmp_path):
    model = te.BaselineEstimator(te.BinaryClassHead(), model_dir=str(tmp_path))
    model.train(toy.input_fn(), steps=2)
    assert model.evaluate(toy.input_fn(), steps=1)["global_step"] == 2


@pytest.mark.parametrize("make, error, words", [
    (lambda d: te.BaselineClassifier(model_dir=d, n_classes=1), ValueError,
     "n_classes must be > 2: 1."),
    (lambda d: te.BaselineRegressor(model_dir=d, optimizer="Nadam"), ValueError,
     "Unsupported optimizer name: Nadam."),
    (lambda d: te.BaselineEstimator("head", model_dir=d), ValueError,
     "head must be a Head"),
], ids=["one-class", "optimizer", "head"])
def test_bad_arguments_are_refused_before_anything_is_written(tmp_path, make, error,
                                                              words):
    with pytest.raises(error, match=words.replace(".", r"\.")):
        make(str(tmp_path / "m"))
    assert not toy.written(str(tmp_path / "m"))


def _one_feature():
    # tf.estimator 2.15's baseline cannot train on two features (its bias's initializer
    # waits on the batch-size check, which reads the input before it is initialized)
    features = toy.data()
    labels = toy.labels_for("binary", features)
    return tf.data.Dataset.from_tensor_slices(({"x": features["x"]}, labels)).batch(16)


@pytest.mark.estimator
def test_a_tf_estimator_checkpoint_evaluates_the_same(tmp_path):
    estimator = toy.tf_estimator()
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    estimator.BaselineClassifier(model_dir=theirs).train(_one_feature, steps=3)
    shutil.copytree(theirs, ours)
    expected = estimator.BaselineClassifier(model_dir=theirs).evaluate(_one_feature)
    got = te.BaselineClassifier(model_dir=ours).evaluate(_one_feature)
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-5), key
