"""The feature columns' checks (as tf.estimator words them) and the two inputs: the
DNN's dense input and the linear model, under tf.estimator's variable names."""

import numpy as np
import pytest
import tensorflow as tf

import canned_toy as toy
from trainexec.estimator_engine.canned import feature_inputs as inputs

pytestmark = pytest.mark.tf_line


def test_dense_columns_are_checked():
    x, c, embedding = toy.columns()
    bucketized = tf.feature_column.bucketized_column(
        tf.feature_column.numeric_column("y"), [0.5])
    assert inputs.check_dense_columns((x, embedding, bucketized)) == [x, embedding,
                                                                      bucketized]
    with pytest.raises(ValueError, match="wrap a categorical column with an "
                       "embedding_column or indicator_column. Given: Identity"):
        inputs.check_dense_columns([x, c])
    for bad in ([], None, "x", {"x": x}):
        with pytest.raises(ValueError):
            inputs.check_dense_columns(bad)


def test_linear_columns_take_dense_and_categorical_ones():
    x, c, _ = toy.columns()
    crossed = tf.feature_column.crossed_column(["c", "d"], 10)
    assert inputs.check_linear_columns([x, c, crossed]) == [x, c, crossed]
    with pytest.raises(ValueError, match="DenseColumn or CategoricalColumn"):
        inputs.check_linear_columns([x, 3])


def test_a_tensorflow_v1_feature_column_is_refused_in_tf_estimators_words():
    # tf.estimator's v2 canned estimators refuse v1 columns with these words, which its
    # own tests match; v1 columns are made by TensorFlow's v1 module (underscored
    # methods), and tf.compat.v1.feature_column's shared_embedding_columns.
    from tensorflow.python.feature_column import feature_column as v1_columns

    v1_numeric = v1_columns._numeric_column("x")
    for check in (inputs.check_dense_columns, inputs.check_linear_columns):
        with pytest.raises(ValueError, match="Received a feature column from TensorFlow "
                           "v1 in feature_columns: _NumericColumn.*tf.feature_column"):
            check([toy.columns()[0], v1_numeric])
    with tf.Graph().as_default():
        shared = tf.compat.v1.feature_column.shared_embedding_columns(
            [toy.columns()[1], tf.feature_column.categorical_column_with_identity("d", 4)],
            2)
        with pytest.raises(ValueError, match="from TensorFlow v1"):
            inputs.check_dense_columns(shared)


@pytest.mark.parametrize("combiner, ok", [("sum", True), ("mean", True),
                                          ("sqrtn", True), ("max", False), (None, False)])
def test_sparse_combiners(combiner, ok):
    if ok:
        assert inputs.check_sparse_combiner(combiner) == combiner
    else:
        with pytest.raises(ValueError, match="must be one of mean, sqrtn, sum"):
            inputs.check_sparse_combiner(combiner)


def test_the_weight_column_is_a_key_or_a_numeric_column():
    assert inputs.weight_column_key(None) is None
    assert inputs.weight_column_key("w") == "w"
    assert inputs.weight_column_key(tf.feature_column.numeric_column("w")) == "w"
    with pytest.raises(TypeError, match="Weight column must be either a string or "
                       "NumericColumn"):
        inputs.weight_column_key(3)
    with pytest.raises(ValueError, match="Feature w is not in features dictionary"):
        inputs.check_features({"x": 1}, "w")
    with pytest.raises(ValueError, match="features should be a dictionary"):
        inputs.check_features([1, 2])


def test_the_inputs_are_built_under_tf_estimators_names():
    x, c, embedding = toy.columns()
    with tf.Graph().as_default():
        features = {key: tf.constant(value) for key, value in toy.data(rows=4).items()}
        with tf.compat.v1.variable_scope("dnn"):
            dense = inputs.dense_input(features, [x, embedding])
        logits, bias, variables = inputs.linear_logits(features, [x, c], 2, "mean")
        assert dense.shape.as_list() == [4, 5] and logits.shape.as_list() == [4, 2]
        assert bias.op.name == "linear_model/bias_weights"
        assert sorted(v.op.name for v in variables) == [
            "linear_model/bias_weights", "linear_model/c/weights",
            "linear_model/x/weights"]
        assert [v.op.name for v in tf.compat.v1.trainable_variables("dnn/")] == [
            "dnn/input_from_feature_columns/input_layer/c_embedding/embedding_weights"]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            np.testing.assert_array_equal(session.run(logits), np.zeros((4, 2)))
