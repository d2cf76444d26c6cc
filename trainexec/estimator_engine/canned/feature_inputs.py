"""What a canned estimator makes of its feature columns: the checks tf.estimator makes
of them (done when the estimator is built, before anything is written), and the two
ways a model reads them, on public TensorFlow only.

* `dense_input(features, columns)`: the DNN's input, one dense Tensor, through
  `tf.compat.v1.feature_column.input_layer` under `input_from_feature_columns/`, so an
  embedding's weights are `dnn/input_from_feature_columns/input_layer/<column>_embedding/
  embedding_weights` as tf.estimator named them (no `DenseFeatures`: it fails under
  Keras 3);
* `linear_logits(features, columns, units, sparse_combiner)`: the linear model's logits,
  its bias and its variables, through `tf.compat.v1.feature_column.linear_model`
  (`linear/linear_model/<column>/weights`, `linear/linear_model/bias_weights`).

A column is dense when it can give a dense Tensor (`get_dense_tensor`: numeric,
bucketized, embedding, indicator columns) and categorical when it gives sparse ids
(`get_sparse_tensors`); the DNN takes dense columns only, the linear model either.
"""

from __future__ import annotations

from typing import Any, Iterable

from trainexec.estimator_engine.compat.feature_columns import is_v1_feature_column

__all__ = ["SPARSE_COMBINERS", "check_dense_columns", "check_features", "check_linear_columns",
           "check_sparse_combiner", "dense_input", "linear_logits", "weight_column_key"]

SPARSE_COMBINERS = ("mean", "sqrtn", "sum")


def _is_dense(column: Any) -> bool:
    return callable(getattr(column, "get_dense_tensor", None))


def _is_categorical(column: Any) -> bool:
    return callable(getattr(column, "get_sparse_tensors", None))


def _as_list(feature_columns: Any, argument: str) -> list:
    if feature_columns is None or isinstance(feature_columns, (str, bytes, dict)):
        raise ValueError(f"{argument} must be an iterable of feature columns (from "
                         f"tf.feature_column), given: {feature_columns!r}")
    try:
        columns = list(feature_columns)
    except TypeError:
        columns = [feature_columns]  # one column alone, as tf.feature_column takes it
    if not columns:
        raise ValueError(f"{argument} must not be empty. Give the model at least one "
                         "feature column, e.g. tf.feature_column.numeric_column('x')")
    for column in columns:
        if is_v1_feature_column(column):
            raise ValueError(
                f"Received a feature column from TensorFlow v1 in {argument}: {column!r}. "
                "trainexec.estimator's canned estimators are tf.estimator's v2 classes "
                "and read v2 feature columns: build this one with tf.feature_column "
                "(tf.compat.v1.estimator's v1 classes are not in trainexec.estimator)")
    return columns


def check_dense_columns(feature_columns: Any, argument: str = "feature_columns") -> list:
    """The DNN's columns as a list; ValueError for an empty list or a column that
    gives no dense Tensor (with tf.estimator's words and the fix)."""
    columns = _as_list(feature_columns, argument)
    for column in columns:
        if not _is_dense(column):
            raise ValueError(
                "Items of feature_columns must be a DenseColumn. You can wrap a "
                "categorical column with an embedding_column or indicator_column. "
                f"Given: {column}")
    return columns


def check_linear_columns(feature_columns: Any, argument: str = "feature_columns") -> list:
    """The linear model's columns as a list; ValueError for an empty list or an item
    that is no feature column."""
    columns = _as_list(feature_columns, argument)
    for column in columns:
        if not (_is_dense(column) or _is_categorical(column)):
            raise ValueError(
                "Items of feature_columns must be either a DenseColumn or "
                f"CategoricalColumn. Given: {column!r} (build them with "
                "tf.feature_column, e.g. tf.feature_column.numeric_column('x'))")
    return columns


def check_sparse_combiner(sparse_combiner: Any, argument: str = "sparse_combiner") -> str:
    """`sparse_combiner` when tf.estimator takes it; ValueError otherwise."""
    if sparse_combiner not in SPARSE_COMBINERS:
        raise ValueError(f"{argument} must be one of {', '.join(SPARSE_COMBINERS)}, "
                         f"given: {sparse_combiner!r}")
    return str(sparse_combiner)


def weight_column_key(weight_column: Any) -> str | None:
    """The features' key of `weight_column` (a string or a numeric column), or None."""
    if weight_column is None:
        return None
    if isinstance(weight_column, str):
        return weight_column
    key = getattr(weight_column, "key", None)
    if not isinstance(key, str) or not _is_dense(weight_column):
        raise TypeError("Weight column must be either a string or NumericColumn. "
                        f"Given type: {type(weight_column)}.")
    return key


def check_features(features: Any, weight_column: Any = None) -> None:
    """ValueError unless `features` is a dict holding the weight column (when there is
    one): what tf.estimator checks when its model_fn is first called."""
    if not isinstance(features, dict):
        raise ValueError("features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features)} (the input_fn returns (features, labels) "
                         "with features a dict by feature name)")
    key = weight_column_key(weight_column)
    if key is not None and key not in features:
        raise ValueError(f"Feature {key} is not in features dictionary. (The weight "
                         f"column {key!r} is missing from the input_fn's features: "
                         f"{sorted(features)})")


def dense_input(features: dict, feature_columns: Iterable) -> Any:
    """One dense Tensor [batch, width] of `feature_columns` (module doc)."""
    import tensorflow as tf

    with tf.compat.v1.variable_scope("input_from_feature_columns"):
        return tf.compat.v1.feature_column.input_layer(
            features=features, feature_columns=list(feature_columns), trainable=True)


def linear_logits(features: dict, feature_columns: Iterable, units: int,
                  sparse_combiner: str = "sum") -> tuple[Any, Any, list]:
    """(logits, bias, variables) of the linear model over `feature_columns`."""
    import tensorflow as tf

    cols_to_vars: dict = {}
    logits = tf.compat.v1.feature_column.linear_model(
        features=features, feature_columns=list(feature_columns), units=units,
        sparse_combiner=sparse_combiner, trainable=True, cols_to_vars=cols_to_vars)
    bias = cols_to_vars.pop("bias")
    weights = [var for column_vars in cols_to_vars.values() for var in column_vars]
    return logits, bias[0], weights + list(bias)
