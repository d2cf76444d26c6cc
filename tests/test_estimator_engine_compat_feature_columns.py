"""trainexec/estimator_engine/compat/feature_columns.py: a TensorFlow v1 feature column
is told from every kind of v2 column, on each line."""

import pytest
import tensorflow as tf

from trainexec.estimator_engine.compat.feature_columns import is_v1_feature_column

pytestmark = pytest.mark.tf_line


def _v2_columns():
    fc = tf.feature_column
    ids = fc.categorical_column_with_identity("c", 4)
    return [fc.numeric_column("x"), tf.compat.v1.feature_column.numeric_column("y"),
            fc.bucketized_column(fc.numeric_column("z"), [0.0]),
            fc.categorical_column_with_hash_bucket("h", 10),
            fc.categorical_column_with_vocabulary_list("v", ["a", "b"]), ids,
            fc.crossed_column(["a", "b"], 10), fc.embedding_column(ids, 2),
            fc.indicator_column(ids), fc.weighted_categorical_column(ids, "w"),
            fc.categorical_column_with_vocabulary_file("f", "vocab.txt", vocabulary_size=2),
            fc.sequence_numeric_column("s"),
            fc.sequence_categorical_column_with_identity("q", 4)]


def test_no_v2_column_is_taken_for_a_v1_one():
    assert [c for c in _v2_columns() if is_v1_feature_column(c)] == []
    with tf.Graph().as_default():
        shared = tf.feature_column.shared_embeddings(
            [tf.feature_column.categorical_column_with_identity(k, 4) for k in "de"], 2)
        assert not any(is_v1_feature_column(c) for c in shared)


def test_v1_columns_are_told_apart():
    from tensorflow.python.feature_column import feature_column as v1_columns

    assert is_v1_feature_column(v1_columns._numeric_column("x"))
    assert is_v1_feature_column(v1_columns._categorical_column_with_hash_bucket("h", 10))
    assert is_v1_feature_column(v1_columns._categorical_column_with_vocabulary_file(
        "f", "vocab.txt", vocabulary_size=2))
    with tf.Graph().as_default():
        shared = tf.compat.v1.feature_column.shared_embedding_columns(
            [tf.feature_column.categorical_column_with_identity(k, 4) for k in "fg"], 2)
        assert all(is_v1_feature_column(c) for c in shared)


@pytest.mark.parametrize("value", [3, "x", None, object()])
def test_what_is_no_feature_column_is_no_v1_one(value):
    assert not is_v1_feature_column(value)


def test_tensorflow_objects_that_are_no_column_are_no_v1_one():
    """Read from the class's module and name: other TensorFlow objects are not taken."""
    assert not is_v1_feature_column(tf.constant(1.0))
    assert not is_v1_feature_column(tf.Variable(1.0))
    assert not is_v1_feature_column(tf.feature_column)
