"""The heads' shape checks (trainexec.estimator_engine.heads.shapes), called directly:
logits, labels, class-id range and example weights, eagerly (a ValueError at once) and
in tf.compat.v1 graphs (a static shape refused when built, a shape known only when the
batch runs failing then with the shapes seen), in tf.estimator's words."""

import numpy as np
import pytest
import tensorflow as tf

from trainexec.estimator_engine.heads import shapes

pytestmark = pytest.mark.tf_line


def _run_fails(fetch, feed, *words):
    """Runs `fetch` in a new session; asserts it fails with all of `words`."""
    with tf.compat.v1.Session() as session:
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            session.run(fetch, feed)
    for word in words:
        assert word in raised.value.message, raised.value.message


def test_logits_of_rank_one_or_the_wrong_width_are_refused_eagerly_naming_the_units():
    with pytest.raises(ValueError, match=r"logits must have rank at least 2\.  Received "
                       r"rank 1, shape \(3,\).*head\.logits_dimension \(2\) units"):
        shapes.check_logits(np.zeros(3, np.float32), 2)
    with pytest.raises(ValueError, match=r"logits shape must be \[D0, D1, \.\.\. DN, "
                       r"logits_dimension\], got \(2, 3\).*\(2\) units"):
        shapes.check_logits(np.zeros((2, 3), np.float32), 2)
    checked = shapes.check_logits(np.array([[1], [-2]], np.int64), 1)  # cast, not changed
    assert checked.dtype == tf.float32 and checked.numpy().tolist() == [[1.0], [-2.0]]


def test_logits_of_unknown_width_fail_in_a_graph_only_when_the_batch_runs():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"got \(2, 2\).*\(3\) units"):  # static: now
            shapes.check_logits(tf.zeros([2, 2]), 3)
        logits = tf.compat.v1.placeholder(tf.float32, [None, None])
        checked = shapes.check_logits(logits, 3)
        with tf.compat.v1.Session() as session:
            assert session.run(checked, {logits: [[1.0, 2.0, 3.0]]}).tolist() == [
                [1.0, 2.0, 3.0]]
        _run_fails(checked, {logits: np.zeros((2, 2))},
                   "logits shape must be [D0, D1, ... DN, logits_dimension]",
                   "head.logits_dimension (3) units", "[2 2]")


def test_missing_or_sparse_labels_are_refused_before_anything_is_built():
    logits = tf.zeros([2, 3])
    with pytest.raises(ValueError, match=r"You must provide a labels Tensor\. Given: None"):
        shapes.check_labels(None, logits, 3)
    sparse = tf.SparseTensor(indices=[[0, 0]], values=[1], dense_shape=[2, 3])
    with pytest.raises(ValueError, match=r"SparseTensor labels are not supported\. Labels "
                       r"must be a Tensor of shape \[D0, D1, \.\.\., DN, 3\].*to_dense"):
        shapes.check_labels(sparse, logits, 3)


def test_labels_one_dimension_short_of_the_logits_get_a_trailing_dimension():
    # A batch of 3 class ids of shape [3] for logits [3, 2]: each id becomes a row of one.
    eager = shapes.check_labels(tf.constant([0, 1, 1]), tf.zeros([3, 2]), 1)
    assert eager.numpy().tolist() == [[0], [1], [1]]
    with tf.Graph().as_default():
        labels = tf.compat.v1.placeholder(tf.int64, [None])
        checked = shapes.check_labels(labels, tf.compat.v1.placeholder(tf.float32, [None, 2]),
                                      1)
        assert checked.shape.as_list() == [None, 1]


def test_labels_of_another_width_or_batch_are_refused_eagerly_with_both_shapes():
    with pytest.raises(ValueError, match=r"Mismatched label shape\. Expected labels "
                       r"dimension=1\.  Received 2\."):
        shapes.check_labels(np.zeros((2, 2), np.float32), tf.zeros([2, 1]), 1)
    with pytest.raises(ValueError, match=r"labels shape must be \[D0, D1, \.\.\. DN, 1\]"
                       r".*expected_labels_shape: \(2, 1\)\. labels_shape: \(3, 1\)"):
        shapes.check_labels(np.zeros((3, 1), np.float32), tf.zeros([2, 1]), 1)


def test_labels_whose_shape_is_known_only_when_run_fail_with_the_shapes_seen():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Expected labels dimension=1.  Received 2"):
            shapes.check_labels(tf.zeros([2, 2]), tf.zeros([2, 1]), 1)  # static: now
        labels = tf.compat.v1.placeholder(tf.float32, [None, None])
        checked = shapes.check_labels(labels, tf.constant([[0.5], [1.5]]), 1)
        with tf.compat.v1.Session() as session:
            assert session.run(checked, {labels: [[7.0], [8.0]]}).tolist() == [[7.0], [8.0]]
        # The module doc's example: a [2, 2] batch where [2, 1] was expected.
        _run_fails(checked, {labels: [[1.0, 2.0], [3.0, 4.0]]},
                   "labels shape must be [D0, D1, ... DN, 1]",
                   "[expected_labels_shape: ] [2 1] [labels_shape: ] [2 2]")


def test_class_ids_outside_zero_to_n_classes_minus_one_are_refused():
    in_range = shapes.check_label_range(tf.constant([[0], [2]]), 3)
    assert in_range.numpy().tolist() == [[0], [2]]
    with pytest.raises(ValueError, match=r"Labels must be <= 3 - 1 \(a head with "
                       r"n_classes=3 takes class ids 0 to 2"):
        shapes.check_label_range(tf.constant([[0], [3]]), 3)
    with pytest.raises(ValueError, match="Labels must be >= 0.*class ids 0 to 2"):
        shapes.check_label_range(tf.constant([[-1]]), 3)
    with tf.Graph().as_default():  # a caller's own message replaces the words and the fix
        labels = tf.compat.v1.placeholder(tf.int64, [None, 1])
        checked = shapes.check_label_range(labels, 2, message="ids must be 0 or 1")
        with tf.compat.v1.Session() as session:
            assert session.run(checked, {labels: [[1], [0]]}).tolist() == [[1], [0]]
            with pytest.raises(tf.errors.InvalidArgumentError) as raised:
                session.run(checked, {labels: [[-1]]})
        assert "ids must be 0 or 1" in raised.value.message
        assert "n_classes=2" not in raised.value.message


def test_weights_per_example_get_a_trailing_dimension_and_per_logit_only_when_allowed():
    logits = tf.zeros([2, 3])
    per_example = shapes.check_weights(tf.constant([2.0, 5.0]), logits, "w")
    assert per_example.numpy().tolist() == [[2.0], [5.0]]
    per_logit = tf.ones([2, 3])
    assert shapes.check_weights(per_logit, logits, "w", per_logit=True).shape == (2, 3)
    with pytest.raises(ValueError, match=r"weights shape must be \[D0, D1, \.\.\. DN\] or "
                       r"\[D0, D1, \.\.\. DN, 1\], logits_shape: \(2, 3\)\. weights_shape: "
                       r"\(2, 3\)\. weight_column 'w'"):
        shapes.check_weights(per_logit, logits, "w")
    with pytest.raises(ValueError, match=r"weights_shape: \(3,\)\. weight_column 'v'"):
        shapes.check_weights(tf.ones([3]), logits, "v")  # 3 weights for 2 examples


def test_weights_of_unknown_shape_are_checked_when_the_batch_runs():
    with tf.Graph().as_default():
        logits = tf.zeros([2, 3])
        weights = tf.compat.v1.placeholder(tf.float32, None)  # not even the rank known
        checked = shapes.check_weights(weights, logits, "w", per_logit=True)
        with tf.compat.v1.Session() as session:
            assert session.run(checked, {weights: np.ones((2, 3))}).shape == (2, 3)
            assert session.run(checked, {weights: [[4.0], [6.0]]}).tolist() == [[4.0], [6.0]]
        _run_fails(checked, {weights: np.ones((2, 2))},
                   "[D0, D1, ... DN, logits_dimension]",
                   "[logits_shape: ] [2 3] [weights_shape: ] [2 2]",
                   "gives each example one weight")
        rows = tf.compat.v1.placeholder(tf.float32, [None])  # one per example, 3 for 2
        _run_fails(shapes.check_weights(rows, logits, "w"), {rows: [1.0, 1.0, 1.0]},
                   "[logits_shape: ] [2 3] [weights_shape: ] [3]")


@pytest.mark.parametrize("per_logit", [False, True])
def test_weights_of_a_rank_known_wrong_in_a_graph_are_refused_as_it_is_built(per_logit):
    # Rank 3 weights for rank 2 logits: no run can fix that; said in the module's words,
    # not as TensorFlow's "Dimensions must be equal" of comparing two shape vectors.
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"weights shape must be \[D0, D1, \.\.\. DN\]"):
            shapes.check_weights(tf.ones([2, 1, 1]), tf.zeros([2, 3]), "w",
                                 per_logit=per_logit)
