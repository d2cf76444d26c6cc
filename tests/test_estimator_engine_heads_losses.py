"""The heads' shared loss core (trainexec.estimator_engine.heads.losses), called
directly: example weights read from a weight_column, a custom loss_fn checked and called
(features passed only when named, the shape of what it returns checked), the weighted
losses reduced (sum, or sum over the number of losses) and regularization added."""

import functools

import pytest
import tensorflow as tf

from trainexec.estimator_engine.heads import losses

pytestmark = pytest.mark.tf_line

LOGITS = tf.zeros([2, 1])


def test_weights_come_from_the_named_feature_as_float_one_per_example():
    assert losses.example_weights({"x": [[1.0], [2.0]]}, None, LOGITS) == 1.0
    # Integer weights of shape [2] for a batch of 2: float32 of shape [2, 1].
    weights = losses.example_weights({"w": tf.constant([2, 3], tf.int64)}, "w", LOGITS)
    assert weights.dtype == tf.float32 and weights.numpy().tolist() == [[2.0], [3.0]]


def test_a_numeric_column_reads_its_key_and_applies_its_normalizer():
    column = tf.feature_column.numeric_column("w", normalizer_fn=lambda w: w * 10.0)
    weights = losses.example_weights({"w": [[1.0], [2.5]], "x": [[7.0], [7.0]]}, column,
                                     LOGITS)
    assert weights.numpy().tolist() == [[10.0], [25.0]]


def test_weights_that_are_not_dense_numbers_or_not_a_column_are_refused():
    with pytest.raises(ValueError, match="Weight column should be castable to float. Given "
                       "dtype: <dtype: 'string'>. Feature 'w' must hold numbers"):
        losses.example_weights({"w": tf.constant(["a", "b"])}, "w", LOGITS)
    sparse = tf.SparseTensor(indices=[[0, 0]], values=[1.0], dense_shape=[2, 1])
    with pytest.raises(ValueError, match="SparseTensor is not supported. key: w"):
        losses.example_weights({"w": sparse}, "w", LOGITS)
    with pytest.raises(TypeError, match="Weight column must be either a string or "
                       "NumericColumn. Given type: .*IdentityCategoricalColumn"):
        losses.example_weights(
            {"w": [[1]]}, tf.feature_column.categorical_column_with_identity("w", 3), LOGITS)
    with pytest.raises(ValueError, match="Feature w is not in features dictionary.*gave "
                       "list"):  # features that are not a dict at all
        losses.example_weights([[1.0], [2.0]], "w", LOGITS)


@pytest.mark.parametrize("reduction,expected", [
    # Losses 1, 2, 3 weighted 1, 0, 4: 1*1 + 2*0 + 3*4 = 13 in all;
    ("sum", 13.0),
    # over the 3 losses (not over the weights' sum, 5, which would give 2.6).
    ("sum_over_batch_size", 13.0 / 3),
    ("auto", 13.0 / 3),
])
def test_weighted_losses_reduce_to_their_sum_or_their_sum_over_the_number_of_losses(
        reduction, expected):
    with tf.Graph().as_default():
        unweighted = tf.constant([[1], [2], [3]])  # integer losses are taken as float
        weights = tf.constant([1.0, 0.0, 4.0])  # [D0] for losses [D0, 1]: aligned
        loss = losses.reduce_loss(unweighted, weights, reduction)
        with tf.compat.v1.Session() as session:
            assert session.run(loss) == pytest.approx(expected)


def test_an_empty_batch_reduces_to_zero_and_regularization_is_added_after():
    assert float(losses.reduce_loss(tf.zeros([0, 1]), 1.0, "sum_over_batch_size")) == 0.0
    # Per-example losses 2 and 4, weight 1: mean 3, plus regularization 0.25 + 0.5.
    mean = losses.reduce_loss(tf.constant([[2.0], [4.0]]), 1.0, "sum_over_batch_size")
    assert float(losses.regularized(mean, [tf.constant(0.25), tf.constant(0.5)])) == 3.75
    assert losses.regularized(mean, None) is mean


def test_a_loss_fn_gets_features_only_when_it_names_them():
    labels, logits = tf.constant([[1.0], [0.0]]), tf.constant([[0.5], [2.0]])
    features = {"x": tf.constant([[3.0], [10.0]])}

    def without_features(labels, logits):  # would fail if given features
        return tf.abs(labels - logits)

    def with_features(labels, logits, features):
        return tf.abs(labels - logits) * features["x"]

    got = losses.call_loss_fn(without_features, labels, logits, features)
    assert got.numpy().tolist() == [[0.5], [2.0]]  # |1 - 0.5|, |0 - 2|
    got = losses.call_loss_fn(with_features, labels, logits, features)
    assert got.numpy().tolist() == [[1.5], [20.0]]  # 0.5 * 3, 2 * 10


def test_a_loss_fn_that_reduces_or_misshapes_its_loss_is_refused():
    reduced = lambda labels, logits: tf.reduce_mean(logits)  # noqa: E731
    with pytest.raises(ValueError, match=r"loss_fn must return Tensor of shape \[D0, D1, "
                       r"\.\.\. DN, 1\]\..*do not reduce it in loss_fn"):
        losses.call_loss_fn(reduced, LOGITS, LOGITS, {})
    # Two losses per example are what a head of label_dimension 2 expects.
    per_logit = losses.call_loss_fn(lambda labels, logits: labels - logits, tf.ones([3, 2]),
                                    tf.zeros([3, 2]), {}, expected_loss_dim=2)
    assert per_logit.shape == (3, 2)
    with tf.Graph().as_default():  # batch size known only when run: checked then
        logits = tf.compat.v1.placeholder(tf.float32, [None, 1])
        doubled = lambda labels, logits: tf.concat([logits, logits], 0)  # noqa: E731
        loss = losses.call_loss_fn(doubled, logits, logits, {})
        with tf.compat.v1.Session() as session:
            with pytest.raises(tf.errors.InvalidArgumentError) as raised:
                session.run(loss, {logits: [[1.0], [2.0]]})
    for words in ("loss_fn must return Tensor of shape [D0, D1, ... DN, 1]",
                  "[logits_shape: ] [2 1] [loss_shape: ] [4 1]"):
        assert words in raised.value.message, raised.value.message


def test_a_loss_fn_may_name_features_and_loss_reduction_or_bind_others_by_partial():
    losses.check_loss_fn(lambda labels, logits, features, loss_reduction: logits)

    def scaled(labels, logits, scale):
        return (labels - logits) * scale

    losses.check_loss_fn(functools.partial(scaled, scale=2.0))
    with pytest.raises(ValueError, match=r"loss_fn must contain argument: logits\. Given "
                       r"arguments: \('labels', 'scale'\)"):
        losses.check_loss_fn(lambda labels, scale: labels)


def test_a_loss_fn_that_reduces_its_loss_in_a_graph_is_refused_as_it_is_built():
    # A scalar loss for [1, 1] logits: the rank is known wrong before anything runs.
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"loss_fn must return Tensor of shape"):
            losses.call_loss_fn(lambda labels, logits: tf.reduce_mean(logits),
                                labels=tf.constant([[1.0]]), logits=tf.constant([[0.5]]),
                                features={}, expected_loss_dim=1)
