"""BinaryClassHead: beside tf.estimator's (TF 2.15: the same loss, metrics, predictions
and signatures, 1e-6, for each option), and on every line the documented numbers and
refusals."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from head_parity import assert_same, batches_of, run_spec
from trainexec.estimator_engine.heads.keys import MetricKeys, PredictionKeys

pytestmark = pytest.mark.tf_line

_RNG = np.random.RandomState(7)


def _float_labels(size):
    return (_RNG.rand(size, 1) > 0.5).astype(np.float32)


def _string_labels(size):
    return np.where(_RNG.rand(size, 1) > 0.5, b"yes", b"no")


def _loss_fn(labels, logits, features):
    return tf.abs(labels - tf.sigmoid(logits)) * features["x"][:, :1]


OPTIONS = [  # id, the head (from an api), labels, weights, spec arguments
    ("default", lambda api: api.BinaryClassHead(), _float_labels, False, {}),
    ("weights", lambda api: api.BinaryClassHead(weight_column="w"), _float_labels, True, {}),
    ("numeric-weights", lambda api: api.BinaryClassHead(
        weight_column=tf.feature_column.numeric_column("w", normalizer_fn=lambda w: w + 1)),
     _float_labels, True, {}),
    ("thresholds", lambda api: api.BinaryClassHead(weight_column="w",
                                                   thresholds=(0.3, 0.5, 0.7)),
     _float_labels, True, {}),
    ("vocabulary", lambda api: api.BinaryClassHead(label_vocabulary=["no", "yes"]),
     _string_labels, False, {}),
    ("sum", lambda api: api.BinaryClassHead(loss_reduction="sum", weight_column="w"),
     _float_labels, True, {}),
    ("loss-fn", lambda api: api.BinaryClassHead(loss_fn=_loss_fn), _float_labels, False, {}),
    ("named-regularized", lambda api: api.BinaryClassHead(name="spam"), _float_labels, False,
     {"regularization_losses": [tf.constant(0.25), tf.constant(0.5)]}),
]


@pytest.mark.estimator
@pytest.mark.parametrize("make_head,labels,weights,kwargs",
                         [row[1:] for row in OPTIONS], ids=[row[0] for row in OPTIONS])
@pytest.mark.parametrize("mode", ["eval", "train", "infer"])
def test_the_same_numbers_as_tf_estimator(make_head, labels, weights, kwargs, mode):
    batches = batches_of(_RNG, 3, 16, 1, labels, weights=weights)
    if mode == "infer":
        batches = [(f, lo, None) for f, lo, _ in batches]
    kwargs = dict(kwargs)
    if "regularization_losses" in kwargs:  # built in each graph
        kwargs["regularization_losses"] = None if mode == "infer" else [0.25, 0.5]
    theirs = run_spec(make_head, tf.estimator, mode, batches, **kwargs)
    ours = run_spec(make_head, te, mode, batches, **kwargs)
    assert_same(theirs, ours)


def test_documented_numbers_eagerly():
    head = te.BinaryClassHead()
    logits = np.array([[45.0], [-41.0]], np.float32)
    labels = np.array([[1], [1]], np.int32)
    features = {"x": np.array([[42.0]], np.float32)}
    assert float(head.loss(labels, logits, features=features)) == pytest.approx(20.5)
    updated = head.update_metrics(head.metrics(), features, logits, labels)
    values = {key: float(metric.result()) for key, metric in updated.items()}
    assert values == pytest.approx({
        MetricKeys.ACCURACY: 0.5, MetricKeys.ACCURACY_BASELINE: 1.0, MetricKeys.AUC: 0.0,
        MetricKeys.AUC_PR: 1.0, MetricKeys.LOSS_MEAN: 20.5, MetricKeys.LABEL_MEAN: 1.0,
        MetricKeys.PRECISION: 1.0, MetricKeys.PREDICTION_MEAN: 0.5, MetricKeys.RECALL: 0.5})
    predictions = head.predictions(logits)
    assert sorted(predictions) == sorted([
        PredictionKeys.LOGITS, PredictionKeys.LOGISTIC, PredictionKeys.PROBABILITIES,
        PredictionKeys.CLASS_IDS, PredictionKeys.CLASSES, PredictionKeys.ALL_CLASS_IDS,
        PredictionKeys.ALL_CLASSES])
    assert predictions[PredictionKeys.CLASSES].numpy().tolist() == [[b"1"], [b"0"]]


def test_predict_spec_serves_classification_regression_and_predict():
    with tf.Graph().as_default():
        spec = te.BinaryClassHead(label_vocabulary=["no", "yes"]).create_estimator_spec(
            features={}, mode=te.ModeKeys.PREDICT, logits=tf.constant([[1.0], [-2.0]]))
        assert sorted(spec.export_outputs) == ["classification", "predict", "regression",
                                               "serving_default"]
        assert isinstance(spec.export_outputs["serving_default"],
                          te.export.ClassificationOutput)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            classes = session.run(spec.predictions[PredictionKeys.CLASSES])
        assert classes.tolist() == [[b"yes"], [b"no"]]


BAD_ARGUMENTS = [  # arguments, the error's words (tf.estimator's), our guidance
    ({"thresholds": (0.0, 0.5)}, r"thresholds not in \(0, 1\)", "strictly between 0 and 1"),
    ({"thresholds": (0.5, 1.0)}, r"thresholds not in \(0, 1\)", "strictly between 0 and 1"),
    ({"loss_reduction": "none"}, "Invalid loss_reduction: none", "sum_over_batch_size"),
    ({"loss_reduction": "bad"}, "Invalid loss_reduction: bad", "sum_over_batch_size"),
    ({"label_vocabulary": "ab"}, "label_vocabulary should be a list or a tuple",
     "in class-id order"),
    ({"loss_fn": lambda logits: logits}, r"loss_fn must contain argument: labels\. Given "
     r"arguments: \('logits',\)", "may also take features"),
    ({"loss_fn": lambda labels, logits, name=None: logits},
     r"loss_fn has unexpected args: \['name'\]", "remove the others"),
]


@pytest.mark.parametrize("arguments,words,guidance", BAD_ARGUMENTS,
                         ids=[str(sorted(row[0])) + row[1][:12] for row in BAD_ARGUMENTS])
def test_bad_arguments_are_refused_in_tf_estimators_words(arguments, words, guidance):
    with pytest.raises(ValueError, match=words) as raised:
        te.BinaryClassHead(**arguments)
    assert guidance in str(raised.value)


def test_labels_outside_zero_one_fail_at_the_first_step():
    with tf.Graph().as_default():
        labels = tf.compat.v1.placeholder(tf.float32, [None, 1])
        loss = te.BinaryClassHead().loss(labels, tf.constant([[0.5]]))
        with tf.compat.v1.Session() as session:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must be <= "
                               "n_classes - 1.*takes class ids 0 to 1"):
                session.run(loss, {labels: [[2.0]]})


def test_a_label_outside_the_vocabulary_fails_at_the_first_step():
    with tf.Graph().as_default():
        loss = te.BinaryClassHead(label_vocabulary=["no", "yes"]).loss(
            tf.constant([["maybe"]]), tf.constant([[0.5]]))
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must be >= 0"):
                session.run(loss)


def test_a_missing_weight_column_is_named():
    with pytest.raises(ValueError, match="Feature w is not in features dictionary.*"
                       "Add the weights to the features"):
        te.BinaryClassHead(weight_column="w").loss(
            np.array([[1.0]]), np.array([[0.5]], np.float32), features={"x": [[1.0]]})
