"""MultiClassHead: beside tf.estimator's (TF 2.15: the same loss, metrics, predictions
and signatures, 1e-6, for each option), and on every line its numbers and refusals."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from head_parity import assert_same, batches_of, run_spec
from trainexec.estimator_engine.heads.keys import MetricKeys

pytestmark = pytest.mark.tf_line

_RNG = np.random.RandomState(11)
_NAMES = np.array([b"a", b"b", b"c"])


def _ids(size):
    return _RNG.randint(0, 3, size=(size, 1)).astype(np.int64)


def _ids_1d(size):
    return _RNG.randint(0, 3, size=(size,)).astype(np.int32)


def _names(size):
    return _NAMES[_RNG.randint(0, 3, size=(size, 1))]


def _loss_fn(labels, logits):
    return tf.cast(labels, tf.float32) * tf.reduce_mean(logits, -1, keepdims=True) ** 2


OPTIONS = [
    ("default", lambda api: api.MultiClassHead(3), _ids, False),
    ("rank-1-labels", lambda api: api.MultiClassHead(3), _ids_1d, False),
    ("weights", lambda api: api.MultiClassHead(3, weight_column="w"), _ids, True),
    ("vocabulary", lambda api: api.MultiClassHead(3, label_vocabulary=["a", "b", "c"]),
     _names, False),
    ("sum-named", lambda api: api.MultiClassHead(3, loss_reduction="sum", name="kind",
                                                 weight_column="w"), _ids, True),
    ("loss-fn", lambda api: api.MultiClassHead(3, loss_fn=_loss_fn), _ids, False),
]


@pytest.mark.estimator
@pytest.mark.parametrize("make_head,labels,weights", [row[1:] for row in OPTIONS],
                         ids=[row[0] for row in OPTIONS])
@pytest.mark.parametrize("mode", ["eval", "train", "infer"])
def test_the_same_numbers_as_tf_estimator(make_head, labels, weights, mode):
    batches = batches_of(_RNG, 3, 16, 3, labels, weights=weights)
    if mode == "infer":
        batches = [(f, lo, None) for f, lo, _ in batches]
    kwargs = {"regularization_losses": [0.5]} if mode == "eval" else {}
    assert_same(run_spec(make_head, tf.estimator, mode, batches, **kwargs),
                run_spec(make_head, te, mode, batches, **kwargs))


def test_documented_numbers_eagerly():
    head = te.MultiClassHead(3)
    logits = np.array([[10.0, 0, 0], [0, 10.0, 0]], np.float32)
    labels = np.array([[1], [1]], np.int64)
    assert float(head.loss(labels, logits)) == pytest.approx(5.0, abs=1e-3)
    updated = head.update_metrics(head.metrics(), {}, logits, labels)
    assert {k: float(m.result()) for k, m in updated.items()} == pytest.approx(
        {MetricKeys.ACCURACY: 0.5, MetricKeys.LOSS_MEAN: 5.0}, abs=1e-3)


@pytest.mark.parametrize("arguments,words", [
    ({"n_classes": 2}, "n_classes must be > 2: 2.*use BinaryClassHead"),
    ({"n_classes": None}, "n_classes cannot be None"),
    ({"n_classes": 3, "label_vocabulary": ["a", "b"]},
     '"label_vocabulary" does not have "n_classes" items.*in class-id order'),
    ({"n_classes": 3, "loss_reduction": "none"}, "Invalid loss_reduction: none"),
])
def test_bad_arguments_are_refused_in_tf_estimators_words(arguments, words):
    with pytest.raises(ValueError, match=words):
        te.MultiClassHead(**arguments)


def test_float_labels_and_string_labels_without_vocabulary_are_refused():
    logits = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="Labels dtype should be integer.*tf.cast"):
        te.MultiClassHead(3).loss(np.array([[0.0], [1.0]], np.float32), logits)
    with pytest.raises(ValueError, match="Labels dtype should be string if there is a "
                       "vocabulary"):
        te.MultiClassHead(3, label_vocabulary=["a", "b", "c"]).loss(
            np.array([[0], [1]]), logits)


def test_a_class_id_out_of_range_fails_at_the_first_step():
    with tf.Graph().as_default():
        labels = tf.compat.v1.placeholder(tf.int64, [None, 1])
        loss = te.MultiClassHead(3).loss(labels, tf.zeros([1, 3]))
        with tf.compat.v1.Session() as session:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Labels must be <= n_classes - 1.*0 to 2"):
                session.run(loss, {labels: [[3]]})
