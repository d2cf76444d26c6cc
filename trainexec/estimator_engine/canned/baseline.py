"""`BaselineClassifier`, `BaselineRegressor`, `BaselineEstimator`: models that ignore
the features' values and learn the labels' average (tf.estimator's v2 baselines: the
same arguments, defaults and variable name, `baseline/bias`).

The logits are the bias, one row per example: the batch size is read from the first
feature that is not the weight column (every other feature is checked to have as many
rows). The default optimizer is `'Ftrl'` at learning rate 0.3.

Example:
    ```python
    import trainexec.estimator as estimator

    baseline = estimator.BaselineClassifier(n_classes=3, model_dir="/tmp/base")
    ```
"""

from __future__ import annotations

from typing import Any, Callable

from trainexec.estimator_engine.canned import arguments
from trainexec.estimator_engine.canned import feature_inputs as inputs
from trainexec.estimator_engine.canned import optimizers
from trainexec.estimator_engine.estimator import Estimator

__all__ = ["BaselineClassifier", "BaselineEstimator", "BaselineRegressor"]

_LEARNING_RATE = 0.3
_SUM_OVER_BATCH_SIZE = "sum_over_batch_size"


def _batch_size(features: dict, weight_key: str | None) -> tuple[Any, list]:
    import tensorflow as tf

    sizes = [tf.shape(value)[0] for key, value in sorted(features.items())
             if key != weight_key]
    if not sizes:
        raise ValueError("A baseline needs one feature besides the weight column to know "
                         "the batch size; the input_fn gave "
                         f"{sorted(features) or 'no features'}")
    checks = [tf.compat.v1.debugging.assert_equal(sizes[0], size) for size in sizes[1:]]
    return sizes[0], checks


def baseline_model_fn(head: Any, optimizer: Any, weight_column: Any = None) -> Callable:
    """The `model_fn` of a baseline with `head`."""
    import tensorflow as tf

    from trainexec.estimator_engine.model_spec import ModeKeys

    weight_key = inputs.weight_column_key(weight_column)

    def model_fn(features: Any, labels: Any, mode: str) -> Any:
        inputs.check_features(features)
        units = head.logits_dimension
        batch_size, checks = _batch_size(features, weight_key)
        with tf.control_dependencies(checks), tf.compat.v1.variable_scope("baseline"):
            bias = tf.compat.v1.get_variable(
                "bias", shape=[units], initializer=tf.compat.v1.zeros_initializer())
            logits = tf.math.multiply(bias, tf.ones(tf.stack([batch_size, units])))
        train_with = None
        if mode == ModeKeys.TRAIN:
            train_with = optimizers.get_optimizer(optimizer, _LEARNING_RATE)
            optimizers.own_global_step(train_with)
        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, optimizer=train_with,
            logits=logits, trainable_variables=[bias])

    return model_fn


class BaselineEstimator(Estimator):
    """A baseline with the given head (tf.estimator's `BaselineEstimator`)."""

    def __init__(self, head: Any, model_dir: str | None = None, optimizer: Any = "Ftrl",
                 config: Any = None) -> None:
        """Args as tf.estimator's. Raises ValueError for an unknown optimizer name."""
        model_fn = baseline_model_fn(arguments.check_head(head),
                                     optimizers.check_optimizer(optimizer))
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)


class BaselineClassifier(Estimator):
    """Predicts the labels' class distribution (tf.estimator's `BaselineClassifier`)."""

    def __init__(self, model_dir: str | None = None, n_classes: int = 2,
                 weight_column: Any = None, label_vocabulary: Any = None,
                 optimizer: Any = "Ftrl", config: Any = None,
                 loss_reduction: str = _SUM_OVER_BATCH_SIZE) -> None:
        """Args as tf.estimator's. Raises ValueError for `n_classes` < 2 or an unknown
        optimizer name."""
        head = arguments.classification_head(n_classes, weight_column, label_vocabulary,
                                             loss_reduction)
        model_fn = baseline_model_fn(head, optimizers.check_optimizer(optimizer),
                                     weight_column)
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)


class BaselineRegressor(Estimator):
    """Predicts the labels' mean (tf.estimator's `BaselineRegressor`)."""

    def __init__(self, model_dir: str | None = None, label_dimension: int = 1,
                 weight_column: Any = None, optimizer: Any = "Ftrl", config: Any = None,
                 loss_reduction: str = _SUM_OVER_BATCH_SIZE) -> None:
        """Args as tf.estimator's. Raises ValueError for an unknown optimizer name."""
        head = arguments.regression_head(label_dimension, weight_column, loss_reduction)
        model_fn = baseline_model_fn(head, optimizers.check_optimizer(optimizer),
                                     weight_column)
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)
