"""RegressionHead, PoissonRegressionHead, LogisticRegressionHead: beside tf.estimator's
(TF 2.15, 1e-6, for each option), and on every line their numbers and refusals."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from head_parity import assert_same, batches_of, run_spec
from trainexec.estimator_engine.heads.keys import MetricKeys, PredictionKeys

pytestmark = pytest.mark.tf_line

_RNG = np.random.RandomState(5)


def _values(dimension):
    return lambda size: _RNG.normal(size=(size, dimension)).astype(np.float32)


def _counts(size):
    return _RNG.poisson(2.0, size=(size, 1)).astype(np.float32)


def _probabilities(size):
    return _RNG.rand(size, 1).astype(np.float32)


OPTIONS = [  # id, head, labels, logits dimension, weights dimension (0: none)
    ("default", lambda api: api.RegressionHead(), _values(1), 1, 0),
    ("rank-1-labels", lambda api: api.RegressionHead(),
     lambda size: _RNG.normal(size=(size,)).astype(np.float32), 1, 0),
    ("weights", lambda api: api.RegressionHead(weight_column="w"), _values(1), 1, 1),
    ("two-values", lambda api: api.RegressionHead(label_dimension=2, weight_column="w"),
     _values(2), 2, 1),
    ("per-value-weights", lambda api: api.RegressionHead(label_dimension=2,
                                                         weight_column="w"),
     _values(2), 2, 2),
    ("inverse-link-sum", lambda api: api.RegressionHead(
        inverse_link_fn=tf.math.exp, loss_reduction="sum", name="r"), _values(1), 1, 0),
    ("poisson", lambda api: api.PoissonRegressionHead(weight_column="w"), _counts, 1, 1),
    ("poisson-partial", lambda api: api.PoissonRegressionHead(compute_full_loss=False),
     _counts, 1, 0),
    ("logistic", lambda api: api.LogisticRegressionHead(weight_column="w"),
     _probabilities, 1, 1),
]


@pytest.mark.estimator
@pytest.mark.parametrize("make_head,labels,dimension,weights",
                         [row[1:] for row in OPTIONS], ids=[row[0] for row in OPTIONS])
@pytest.mark.parametrize("mode", ["eval", "train", "infer"])
def test_the_same_numbers_as_tf_estimator(make_head, labels, dimension, weights, mode):
    batches = batches_of(_RNG, 3, 16, dimension, labels, weights=bool(weights),
                         weights_dim=weights or 1)
    for _, logits, _ in batches:  # keep exp(logits) finite
        np.clip(logits, -5, 5, out=logits)
    if mode == "infer":
        batches = [(f, lo, None) for f, lo, _ in batches]
    assert_same(run_spec(make_head, tf.estimator, mode, batches),
                run_spec(make_head, te, mode, batches))


def test_documented_numbers_eagerly():
    head = te.RegressionHead()
    logits = np.array([[45.0], [41.0]], np.float32)
    labels = np.array([[43], [44]], np.int32)
    assert float(head.loss(labels, logits)) == pytest.approx(6.5)
    updated = head.update_metrics(head.metrics(), {}, logits, labels)
    assert {k: float(m.result()) for k, m in updated.items()} == pytest.approx({
        MetricKeys.LOSS_MEAN: 6.5, MetricKeys.LABEL_MEAN: 43.5,
        MetricKeys.PREDICTION_MEAN: 43.0})


def test_poisson_predicts_exp_and_serves_regression():
    with tf.Graph().as_default():
        spec = te.PoissonRegressionHead().create_estimator_spec(
            features={}, mode=te.ModeKeys.PREDICT, logits=tf.constant([[0.0], [1.0]]))
        assert sorted(spec.export_outputs) == ["predict", "regression", "serving_default"]
        assert isinstance(spec.export_outputs["serving_default"], te.export.RegressionOutput)
        with tf.compat.v1.Session() as session:
            got = session.run(spec.predictions[PredictionKeys.PREDICTIONS])
        np.testing.assert_allclose(got, [[1.0], [np.e]], rtol=1e-6)


def test_bad_label_dimension_and_logistic_labels_are_refused():
    with pytest.raises(ValueError, match="Invalid label_dimension 0"):
        te.RegressionHead(label_dimension=0)
    with pytest.raises(ValueError, match=r"Labels must be in range \[0, 1\]"):
        te.LogisticRegressionHead().loss(np.array([[2.0]], np.float32),
                                         np.array([[0.5]], np.float32))


def test_weights_of_the_wrong_shape_name_the_column():
    with pytest.raises(ValueError, match=r"weights shape must be.*weight_column 'w'"):
        te.RegressionHead(label_dimension=2, weight_column="w").loss(
            np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32),
            features={"w": np.ones((2, 3), np.float32)})
