"""`LinearClassifier`, `LinearRegressor`, `LinearEstimator`: a linear model over dense
and categorical feature columns (tf.estimator's v2 linear estimators: the same
arguments, defaults and variable names).

The model is `tf.compat.v1.feature_column.linear_model` under the variable scope
`linear`: one `linear/linear_model/<column>/weights` per column and
`linear/linear_model/bias_weights`; a multivalent categorical column's weights combine
by `sparse_combiner` (`sum`, `mean` or `sqrtn`). Summaries as tf.estimator's: `bias`
and `fraction_of_zero_weights`. The default optimizer is `'Ftrl'` at learning rate 0.2
(given by name) or, when `optimizer` is None, at `min(0.2, 1/sqrt(len(columns)))`.

Example:
    ```python
    import tensorflow as tf
    import trainexec.estimator as estimator

    age = tf.feature_column.numeric_column("age")
    sex = tf.feature_column.categorical_column_with_vocabulary_list(
        "sex", ["male", "female"])
    classifier = estimator.LinearClassifier([age, sex], model_dir="/tmp/titanic")
    ```
"""

from __future__ import annotations

import math
from typing import Any, Callable

from trainexec.estimator_engine.canned import arguments
from trainexec.estimator_engine.canned import feature_inputs as inputs
from trainexec.estimator_engine.canned import optimizers
from trainexec.estimator_engine.estimator import Estimator

__all__ = ["LinearClassifier", "LinearEstimator", "LinearRegressor", "linear_part"]

_LEARNING_RATE = 0.2
_SUM_OVER_BATCH_SIZE = "sum_over_batch_size"


def _fraction_of_zero(variables: list) -> Any:
    import tensorflow as tf

    with tf.compat.v1.name_scope("zero_fraction"):
        sizes = [tf.cast(tf.size(var), tf.float32) for var in variables]
        zeros = [tf.math.zero_fraction(var) * size for var, size in zip(variables, sizes)]
        return tf.math.divide_no_nan(tf.math.add_n(zeros), tf.math.add_n(sizes))


def linear_part(features: dict, feature_columns: list, units: int,
                sparse_combiner: str) -> tuple[Any, list]:
    """(logits, trainable variables) of the linear model (module doc), with its
    summaries."""
    import tensorflow as tf

    with tf.compat.v1.variable_scope("linear"):
        logits, bias, variables = inputs.linear_logits(features, feature_columns, units,
                                                       sparse_combiner)
    if units > 1:
        tf.compat.v1.summary.histogram("bias", bias)
    else:
        tf.compat.v1.summary.scalar("bias", bias[0])
    weights = [var for var in variables if var is not bias]
    tf.compat.v1.summary.scalar("fraction_of_zero_weights", _fraction_of_zero(weights))
    return logits, variables


def default_learning_rate(feature_columns: list) -> float:
    """tf.estimator's learning rate for a linear model given no optimizer."""
    return min(_LEARNING_RATE, 1.0 / math.sqrt(len(feature_columns)))


def linear_model_fn(head: Any, feature_columns: list, optimizer: Any,
                    sparse_combiner: str) -> Callable:
    """The `model_fn` of a linear estimator with `head`."""
    from trainexec.estimator_engine.model_spec import ModeKeys

    def model_fn(features: Any, labels: Any, mode: str) -> Any:
        inputs.check_features(features)
        logits, variables = linear_part(features, feature_columns, head.logits_dimension,
                                        sparse_combiner)
        train_with = None
        if mode == ModeKeys.TRAIN:
            if optimizer is None:
                train_with = optimizers.get_optimizer(
                    "Ftrl", default_learning_rate(feature_columns))
            else:
                train_with = optimizers.get_optimizer(optimizer, _LEARNING_RATE)
            optimizers.own_global_step(train_with)
        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, optimizer=train_with,
            logits=logits, trainable_variables=variables)

    return model_fn


class LinearEstimator(Estimator):
    """A linear model with the given head (tf.estimator's `LinearEstimator`)."""

    def __init__(self, head: Any, feature_columns: Any, model_dir: str | None = None,
                 optimizer: Any = "Ftrl", config: Any = None,
                 sparse_combiner: str = "sum", warm_start_from: Any = None) -> None:
        """Args as tf.estimator's (module doc).

        Raises:
            ValueError: for no feature columns or an item that is none, an unknown
                optimizer name, or a `sparse_combiner` not `sum`, `mean` or `sqrtn`.
        """
        if optimizer is not None:
            optimizers.check_optimizer(optimizer)
        model_fn = linear_model_fn(
            arguments.check_head(head), inputs.check_linear_columns(feature_columns),
            optimizer, inputs.check_sparse_combiner(sparse_combiner))
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class LinearClassifier(LinearEstimator):
    """A linear classifier (tf.estimator's `LinearClassifier`): logistic regression
    for `n_classes=2`, softmax above."""

    def __init__(self, feature_columns: Any, model_dir: str | None = None,
                 n_classes: int = 2, weight_column: Any = None,
                 label_vocabulary: Any = None, optimizer: Any = "Ftrl",
                 config: Any = None, warm_start_from: Any = None,
                 loss_reduction: str = _SUM_OVER_BATCH_SIZE,
                 sparse_combiner: str = "sum") -> None:
        """Args as tf.estimator's; see `LinearEstimator` for what is refused, and
        ValueError for `n_classes` < 2."""
        head = arguments.classification_head(n_classes, weight_column, label_vocabulary,
                                             loss_reduction)
        super().__init__(head, feature_columns, model_dir=model_dir, optimizer=optimizer,
                         config=config, sparse_combiner=sparse_combiner,
                         warm_start_from=warm_start_from)


class LinearRegressor(LinearEstimator):
    """A linear regressor (tf.estimator's `LinearRegressor`)."""

    def __init__(self, feature_columns: Any, model_dir: str | None = None,
                 label_dimension: int = 1, weight_column: Any = None,
                 optimizer: Any = "Ftrl", config: Any = None,
                 warm_start_from: Any = None, loss_reduction: str = _SUM_OVER_BATCH_SIZE,
                 sparse_combiner: str = "sum") -> None:
        """Args as tf.estimator's; see `LinearEstimator` for what is refused."""
        head = arguments.regression_head(label_dimension, weight_column, loss_reduction)
        super().__init__(head, feature_columns, model_dir=model_dir, optimizer=optimizer,
                         config=config, sparse_combiner=sparse_combiner,
                         warm_start_from=warm_start_from)
