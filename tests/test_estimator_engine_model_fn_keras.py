"""trainexec/estimator_engine/model_fn_keras.py: a model_fn of unnamed `tf.keras.layers`
(as TensorFlow's r1 models wrote them) trains, evaluates, predicts and exports on every
line, its variables named alike in every graph (as tf_keras names them, per graph); and
a Keras 2 model_fn failing under Keras 3 says how to run it."""

import re

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from engine_models import (data, eval_input_fn, predict_input_fn,
                           serving_input_receiver_fn_for, train_input_fn)
from trainexec.estimator_engine.model_fn_keras import KERAS_2_HINT, keras_2_hint
from trainexec.internals import LINE_KERAS_3, current_line

pytestmark = pytest.mark.tf_line


def unnamed_layers_model_fn(features, labels, mode):
    hidden = tf.keras.layers.Dense(8, activation="relu")(features["x"])
    logits = tf.keras.layers.Dense(2)(hidden)
    classes = tf.argmax(logits, 1)
    if mode == te.ModeKeys.PREDICT:
        predictions = {"class": classes, "logits": logits}
        return te.EstimatorSpec(mode, predictions=predictions, export_outputs={
            "serving_default": te.export.PredictOutput(predictions)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return te.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops={
        "accuracy": tf.compat.v1.metrics.accuracy(labels, classes)})


def layer_number(name):
    found = re.fullmatch(r"dense(?:_(\d+))?", name)
    return int(found.group(1) or 0)


@pytest.mark.keras
def test_unnamed_keras_layers_train_evaluate_predict_and_export(tmp_path, no_tf_config):
    before = tf.keras.layers.Dense(1).name
    estimator = te.Estimator(unnamed_layers_model_fn, model_dir=str(tmp_path / "m"))
    estimator.train(train_input_fn, max_steps=60)
    first = estimator.evaluate(eval_input_fn)
    assert first["accuracy"] > 0.8 and first == estimator.evaluate(eval_input_fn)
    estimator.train(train_input_fn, max_steps=80)  # a new training graph resumes
    assert estimator.evaluate(eval_input_fn)["global_step"] == 80

    predicted = list(estimator.predict(predict_input_fn, yield_single_examples=False))
    again = list(estimator.predict(predict_input_fn, yield_single_examples=False))
    logits = np.concatenate([batch["logits"] for batch in predicted])
    np.testing.assert_array_equal(logits, np.concatenate([b["logits"] for b in again]))
    path = estimator.export_saved_model(str(tmp_path / "export"),
                                        serving_input_receiver_fn_for(te)).decode()
    served = tf.saved_model.load(path).signatures["serving_default"](
        x=tf.constant(data(7, 3)[0]))
    np.testing.assert_allclose(served["logits"].numpy(), logits, rtol=1e-5, atol=1e-6)

    names = sorted(n for n in estimator.get_variable_names() if "/Adam" not in n
                   and not n.startswith(("beta", "global_step")))
    if current_line() != LINE_KERAS_3:  # tf_keras, Keras 2.15: per graph, as always
        assert names == ["dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel"]
    else:
        assert len(names) == 4 and names[:2] == ["dense/bias", "dense/kernel"]
    # A second Estimator in this process names them alike (Keras 3 counted on before).
    other = te.Estimator(unnamed_layers_model_fn, model_dir=str(tmp_path / "other"))
    other.train(train_input_fn, max_steps=1)
    assert sorted(n for n in other.get_variable_names() if n in names) == names
    # The user's own count of automatic names goes on where it was.
    assert layer_number(tf.keras.layers.Dense(1).name) == layer_number(before) + 1


def raising(error):
    def model_fn(features, labels, mode):
        raise error
    return model_fn


def keras_2_layers(features, labels, mode):
    tf.compat.v1.layers.dense(features["x"], 2)


def dense_features(features, labels, mode):
    tf.keras.layers.DenseFeatures([tf.feature_column.numeric_column("x", shape=[4])])


def misspelt(features, labels, mode):
    tf.keras.layers.Denze(2)


@pytest.mark.keras
@pytest.mark.parametrize("model_fn, hinted", [
    (keras_2_layers, True),
    (dense_features, True),
    (misspelt, False),
    (raising(AttributeError("'NoneType' object has no attribute 'shape'")), False),
], ids=["tf.compat.v1.layers", "DenseFeatures", "a-misspelt-keras-3-name",
        "another-attribute-error"])
def test_a_keras_2_name_under_keras_3_says_how_to_run_it(tmp_path, no_tf_config, model_fn,
                                                         hinted):
    if hinted and current_line() != LINE_KERAS_3:
        pytest.skip("Keras 2 names are there on this line (tf_keras, Keras 2.15)")
    estimator = te.Estimator(model_fn, model_dir=str(tmp_path))
    with pytest.raises(AttributeError) as raised:
        estimator.train(train_input_fn, max_steps=1)
    message = str(raised.value)
    if hinted:
        assert "TF_USE_LEGACY_KERAS=1" in message and "trainexec[tf-keras]" in message
        assert message.startswith(str(raised.value.__cause__))  # TensorFlow's words first
    else:
        assert KERAS_2_HINT not in message and raised.value.__cause__ is None


@pytest.mark.parametrize("error, hinted", [
    (AttributeError("`dense` is not available with Keras 3."), True),
    (AttributeError("`conv2d` is not available with Keras 3."), True),
    (AttributeError("module 'tf_keras.layers' has no attribute 'Denze'"), False),
    (ValueError("`dense` is not available with Keras 3."), False),
])
def test_which_errors_get_the_hint(error, hinted):
    assert (keras_2_hint(error) == KERAS_2_HINT) is hinted
