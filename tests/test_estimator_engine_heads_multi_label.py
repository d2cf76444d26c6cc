"""MultiLabelHead: beside tf.estimator's (TF 2.15, 1e-6, for each option: multi-hot and
sparse labels, a vocabulary, thresholds, per-class metrics), and on every line its
numbers and refusals."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from head_parity import assert_same, batches_of, run_spec
from trainexec.estimator_engine.heads.keys import MetricKeys

pytestmark = pytest.mark.tf_line

_RNG = np.random.RandomState(3)
_NAMES = np.array([b"a", b"b", b"c"])


def _multi_hot(size):
    return (_RNG.rand(size, 3) > 0.6).astype(np.int64)


def _sparse(values_of):
    def make(size):
        indices, values = [], []
        for row in range(size):
            for column, class_id in enumerate(sorted(set(_RNG.randint(0, 3, size=2)))):
                indices.append([row, column])
                values.append(class_id)
        return tf.compat.v1.SparseTensorValue(np.array(indices, np.int64),
                                              values_of(np.array(values)),
                                              np.array([size, 2], np.int64))
    return make


OPTIONS = [
    ("default", lambda api: api.MultiLabelHead(3), _multi_hot, False),
    ("weights-thresholds", lambda api: api.MultiLabelHead(3, weight_column="w",
                                                          thresholds=(0.2, 0.6)),
     _multi_hot, True),
    ("per-class", lambda api: api.MultiLabelHead(3, classes_for_class_based_metrics=[0, 2],
                                                 weight_column="w"), _multi_hot, True),
    ("sparse-ids", lambda api: api.MultiLabelHead(3, name="tags"),
     _sparse(lambda v: v.astype(np.int64)), False),
    ("sparse-names", lambda api: api.MultiLabelHead(
        3, label_vocabulary=["a", "b", "c"], classes_for_class_based_metrics=["b"]),
     _sparse(lambda v: _NAMES[v]), False),
    ("sum", lambda api: api.MultiLabelHead(3, loss_reduction="sum"), _multi_hot, False),
]


@pytest.mark.estimator
@pytest.mark.parametrize("make_head,labels,weights", [row[1:] for row in OPTIONS],
                         ids=[row[0] for row in OPTIONS])
@pytest.mark.parametrize("mode", ["eval", "train", "infer"])
def test_the_same_numbers_as_tf_estimator(make_head, labels, weights, mode):
    batches = batches_of(_RNG, 3, 16, 3, labels, weights=weights)
    if mode == "infer":
        batches = [(f, lo, None) for f, lo, _ in batches]
    assert_same(run_spec(make_head, tf.estimator, mode, batches),
                run_spec(make_head, te, mode, batches))


def test_documented_numbers_eagerly():
    head = te.MultiLabelHead(2)
    logits = np.array([[-1.0, 1.0], [-1.5, 1.5]], np.float32)
    labels = np.array([[1, 0], [1, 1]], np.int64)
    assert float(head.loss(labels, logits)) == pytest.approx(1.13, abs=5e-3)
    updated = head.update_metrics(head.metrics(), {}, logits, labels)
    assert {k: float(m.result()) for k, m in updated.items()} == pytest.approx({
        MetricKeys.AUC: 0.33, MetricKeys.AUC_PR: 0.77, MetricKeys.LOSS_MEAN: 1.13},
        abs=5e-3)


@pytest.mark.parametrize("arguments,words", [
    ({"n_classes": 1}, r"n_classes must be > 1 for multi-label classification\. Given: 1"),
    ({"n_classes": 2, "thresholds": [1.0]}, r"thresholds must be in \(0, 1\) range\. "
     r"Given: 1\.0"),
    ({"n_classes": 3, "label_vocabulary": ["a", "b"]},
     r"Length of label_vocabulary must be n_classes \(3\)\. Given: 2"),
    ({"n_classes": 3, "classes_for_class_based_metrics": [3]},
     r"All classes_for_class_based_metrics must be in range \[0, 2\]\. Given: 3"),
    ({"n_classes": 3, "classes_for_class_based_metrics": ["b"]},
     "label_vocabulary must be provided when classes_for_class_based_metrics are strings"),
])
def test_bad_arguments_are_refused_in_tf_estimators_words(arguments, words):
    with pytest.raises(ValueError, match=words):
        te.MultiLabelHead(**arguments)


def test_labels_that_are_not_multi_hot_are_refused():
    with pytest.raises(ValueError, match=r"labels must be an integer indicator Tensor with "
                       r"values in \[0, 1\]"):
        te.MultiLabelHead(2).loss(np.array([[2, 0]], np.int64), np.zeros((1, 2), np.float32))
