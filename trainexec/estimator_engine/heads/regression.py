"""`RegressionHead` (squared error) and its generalized linear models,
`PoissonRegressionHead` (log-Poisson loss, predicting exp(logits)) and
`LogisticRegressionHead` (sigmoid cross-entropy on labels in [0, 1], predicting
sigmoid(logits)).

Logits and labels are `[D0, ... DN, label_dimension]` (labels may drop a last
dimension of 1); weights `[D0, ... DN]`, `[D0, ... DN, 1]` or one per value. The loss
sums over every value (examples and label dimension). Predictions: `predictions`
(`inverse_link_fn(logits)`, the logits themselves by default) and, with an inverse
link, `logits`. Metrics: `average_loss`, `prediction/mean`, `label/mean`.
Signatures: `serving_default` and `regression` (the predictions), `predict`.

Example:
    ```python
    head = RegressionHead(label_dimension=2, weight_column="w")
    ```
"""

from __future__ import annotations

from typing import Any, Callable

from trainexec.estimator_engine.heads import losses, metrics, shapes
from trainexec.estimator_engine.heads.base import SingleHead
from trainexec.estimator_engine.heads.keys import (DEFAULT_SERVING_KEY, PREDICT_SERVING_KEY,
                                                   REGRESS_SERVING_KEY, LossReduction,
                                                   MetricKeys, PredictionKeys,
                                                   check_loss_reduction)

__all__ = ["LogisticRegressionHead", "PoissonRegressionHead", "RegressionHead"]

_K, _P = MetricKeys, PredictionKeys


class RegressionHead(SingleHead):
    """A head for regression (module doc).

    Args:
        label_dimension: values per example (the logits' and labels' last dimension).
        weight_column: a feature name or `tf.feature_column.numeric_column` of example
            weights, or None.
        loss_reduction: `sum_over_batch_size` (default), `sum` or `auto`.
        loss_fn: `loss_fn(labels, logits[, features, loss_reduction])` returning the
            unreduced loss `[D0, ... DN, label_dimension]`, instead of squared error.
        inverse_link_fn: logits -> predicted values (e.g. `tf.math.exp`), or None.
        name: suffix of the metric keys and the ops' name scope.
    """

    def __init__(self, label_dimension: int = 1, weight_column: Any = None,
                 loss_reduction: str = LossReduction.SUM_OVER_BATCH_SIZE,
                 loss_fn: Callable | None = None, inverse_link_fn: Callable | None = None,
                 name: str | None = None) -> None:
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}. label_dimension "
                             "is the number of values per example, 1 or more")
        self._loss_reduction = check_loss_reduction(loss_reduction)
        if loss_fn:
            losses.check_loss_fn(loss_fn)
        self._dimension = label_dimension
        self._weight_column, self._loss_fn, self._name = weight_column, loss_fn, name
        self._inverse_link_fn = inverse_link_fn

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def logits_dimension(self) -> int:
        return self._dimension

    @property
    def loss_reduction(self) -> str:
        return self._loss_reduction

    def _labels(self, logits: Any, labels: Any) -> Any:
        import tensorflow as tf

        return tf.cast(shapes.check_labels(labels, logits, self._dimension), tf.float32)

    def _unweighted_loss_and_weights(self, logits: Any, labels: Any, features: Any
                                     ) -> tuple[Any, Any]:
        import tensorflow as tf

        if self._loss_fn:
            unweighted = losses.call_loss_fn(self._loss_fn, labels, logits, features,
                                             self._dimension)
        else:
            logits.shape.assert_is_compatible_with(labels.shape)
            unweighted = tf.math.squared_difference(logits, labels)
        weights = losses.example_weights(features, self._weight_column, logits,
                                         per_logit=True)
        return unweighted, weights

    def loss(self, labels: Any, logits: Any, features: Any = None, mode: Any = None,
             regularization_losses: Any = None) -> Any:
        """The regularized training loss (the weighted loss, reduced)."""
        import tensorflow as tf

        with tf.compat.v1.name_scope("losses"):
            logits = shapes.check_logits(logits, self._dimension)
            labels = self._labels(logits, labels)
            unweighted, weights = self._unweighted_loss_and_weights(logits, labels, features)
            loss = losses.reduce_loss(unweighted, weights, self._loss_reduction)
            return losses.regularized(loss, regularization_losses)

    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """`predictions` (and `logits` when there is an inverse link)."""
        import tensorflow as tf

        logits = shapes.check_logits(logits, self._dimension)
        with tf.compat.v1.name_scope("predictions"):
            if self._inverse_link_fn is None:
                return {_P.PREDICTIONS: logits}
            return {_P.PREDICTIONS: self._inverse_link_fn(logits), _P.LOGITS: logits}

    def metrics(self, regularization_losses: Any = None) -> dict:
        """New metric objects: average loss, prediction and label means."""
        import tensorflow as tf

        key = self.metric_key
        with tf.compat.v1.name_scope("metrics"):
            made = {key(name): metrics.Mean(name)
                    for name in (_K.LOSS_MEAN, _K.PREDICTION_MEAN, _K.LABEL_MEAN)}
            if regularization_losses is not None:
                made[key(_K.LOSS_REGULARIZATION)] = metrics.Mean(_K.LOSS_REGULARIZATION)
        return made

    def update_metrics(self, eval_metrics: dict, features: Any, logits: Any, labels: Any,
                       regularization_losses: Any = None, mode: Any = None) -> dict:
        """`eval_metrics` (from `metrics()`) updated with one batch."""
        import tensorflow as tf

        key = self.metric_key
        predicted = self.predictions(logits)[_P.PREDICTIONS]
        logits = shapes.check_logits(logits, self._dimension)
        processed = self._labels(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, processed, features)
        eval_metrics[key(_K.LOSS_MEAN)].update_state(unweighted, sample_weight=weights)
        # The labels as given (their mean, as tf.estimator takes it).
        eval_metrics[key(_K.LABEL_MEAN)].update_state(
            tf.convert_to_tensor(labels), sample_weight=weights)
        predicted_weights = (None if isinstance(weights, float)
                             else metrics.broadcast_weights(weights, predicted))
        eval_metrics[key(_K.PREDICTION_MEAN)].update_state(predicted,
                                                           sample_weight=predicted_weights)
        if regularization_losses is not None:
            eval_metrics[key(_K.LOSS_REGULARIZATION)].update_state(
                tf.math.add_n(list(regularization_losses)))
        return eval_metrics

    def export_outputs(self, predictions: dict) -> dict:
        from trainexec.estimator_engine.export_outputs import PredictOutput, RegressionOutput

        regression = RegressionOutput(predictions[_P.PREDICTIONS])
        return {DEFAULT_SERVING_KEY: regression, REGRESS_SERVING_KEY: regression,
                PREDICT_SERVING_KEY: PredictOutput(predictions)}


class PoissonRegressionHead(RegressionHead):
    """Poisson regression: `tf.nn.log_poisson_loss`, predicting exp(logits).

    Args:
        label_dimension: values per example.
        weight_column: a feature name or numeric column of example weights, or None.
        loss_reduction: `sum_over_batch_size` (default), `sum` or `auto`.
        compute_full_loss: whether to add the constant Stirling term log(z!) to the loss.
        name: suffix of the metric keys and the ops' name scope.
    """

    def __init__(self, label_dimension: int = 1, weight_column: Any = None,
                 loss_reduction: str = LossReduction.SUM_OVER_BATCH_SIZE,
                 compute_full_loss: bool = True, name: str | None = None) -> None:
        import tensorflow as tf

        self._compute_full_loss = compute_full_loss
        super().__init__(label_dimension=label_dimension, weight_column=weight_column,
                         loss_reduction=loss_reduction, loss_fn=self._poisson_loss,
                         inverse_link_fn=tf.math.exp, name=name)

    def _poisson_loss(self, labels: Any, logits: Any) -> Any:
        import tensorflow as tf

        return tf.nn.log_poisson_loss(targets=labels, log_input=logits,
                                      compute_full_loss=self._compute_full_loss)


class LogisticRegressionHead(RegressionHead):
    """Logistic regression: sigmoid cross-entropy on labels in [0, 1], predicting
    sigmoid(logits); one value per example, no vocabulary, no classification metrics.

    Args:
        weight_column: a feature name or numeric column of example weights, or None.
        loss_reduction: `sum_over_batch_size` (default), `sum` or `auto`.
        name: suffix of the metric keys and the ops' name scope.
    """

    def __init__(self, weight_column: Any = None,
                 loss_reduction: str = LossReduction.SUM_OVER_BATCH_SIZE,
                 name: str | None = None) -> None:
        import tensorflow as tf

        super().__init__(label_dimension=1, weight_column=weight_column,
                         loss_reduction=loss_reduction, loss_fn=self._logistic_loss,
                         inverse_link_fn=tf.math.sigmoid, name=name)

    def _logistic_loss(self, labels: Any, logits: Any) -> Any:
        import tensorflow as tf

        labels = shapes.check_label_range(
            labels, 2, message="Labels must be in range [0, 1] (LogisticRegressionHead's "
            "labels are probabilities)")
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
