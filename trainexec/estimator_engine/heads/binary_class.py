"""`BinaryClassHead`: one label per example, two classes, sigmoid cross-entropy.

Logits are `[D0, ... DN, 1]`; labels `[D0, ... DN, 1]` (or `[D0, ... DN]`): floats in
[0, 1], or strings of `label_vocabulary` (two names, class 0 first). Predictions:
`logits`, `logistic` (sigmoid), `probabilities` ([1 - p, p]), `class_ids`, `classes`,
`all_class_ids`, `all_classes`. Metrics: `accuracy`, `precision`, `recall`,
`prediction/mean`, `label/mean`, `accuracy_baseline`, `auc`, `auc_precision_recall`,
`average_loss`, and per threshold `accuracy/positive_threshold_<t>`, precision and
recall at `t`. Signatures: `serving_default` and `classification` (class scores and
names), `regression` (the logistic), `predict` (every prediction).

Example:
    ```python
    head = BinaryClassHead(weight_column="w", thresholds=(0.3, 0.7))
    spec = head.create_estimator_spec(features=features, mode=mode, logits=logits,
                                      labels=labels, optimizer=optimizer)
    ```
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from trainexec.estimator_engine.heads import losses, metrics, shapes
from trainexec.estimator_engine.heads.auc import AUC
from trainexec.estimator_engine.heads.base import (SingleHead, check_prediction_keys,
                                                   predicted_classes)
from trainexec.estimator_engine.heads.keys import (CLASSIFY_SERVING_KEY, DEFAULT_SERVING_KEY,
                                                   PREDICT_SERVING_KEY, REGRESS_SERVING_KEY,
                                                   LossReduction, MetricKeys,
                                                   PredictionKeys, check_loss_reduction)
from trainexec.estimator_engine.heads.vocabulary import (all_class_ids, all_classes,
                                                         check_vocabulary, class_ids_of)

__all__ = ["BinaryClassHead", "check_thresholds"]

_K, _P = MetricKeys, PredictionKeys
_VALID_KEYS = [_P.LOGITS, _P.LOGISTIC, _P.PROBABILITIES, _P.CLASS_IDS, _P.CLASSES,
               _P.ALL_CLASS_IDS, _P.ALL_CLASSES]


def check_thresholds(thresholds: Iterable[float] | None, words: Callable[[Any], str]
                     ) -> tuple[float, ...]:
    """`thresholds` as a tuple; ValueError (with `words(bad)`) for one outside (0, 1)."""
    checked = tuple(thresholds) if thresholds else ()
    for threshold in checked:
        if threshold <= 0.0 or threshold >= 1.0:
            raise ValueError(words(threshold) + " Each threshold is a probability "
                             "strictly between 0 and 1, e.g. thresholds=(0.3, 0.5, 0.7)")
    return checked


class BinaryClassHead(SingleHead):
    """A head for binary classification (module doc).

    Args:
        weight_column: a feature name or `tf.feature_column.numeric_column` of example
            weights (multiplying each example's loss), or None.
        thresholds: probabilities in (0, 1); each adds accuracy, precision and recall
            at that threshold.
        label_vocabulary: the two class names, when labels are strings.
        loss_reduction: `sum_over_batch_size` (default), `sum` or `auto`.
        loss_fn: `loss_fn(labels, logits[, features, loss_reduction])` returning the
            unreduced loss `[D0, ... DN, 1]`, instead of sigmoid cross-entropy.
        name: suffix of the metric keys (`auc/<name>`) and the ops' name scope.
    """

    def __init__(self, weight_column: Any = None, thresholds: Iterable[float] | None = None,
                 label_vocabulary: Any = None,
                 loss_reduction: str = LossReduction.SUM_OVER_BATCH_SIZE,
                 loss_fn: Callable | None = None, name: str | None = None) -> None:
        self._label_vocabulary = check_vocabulary(label_vocabulary)
        self._thresholds = check_thresholds(
            thresholds, lambda _: f"thresholds not in (0, 1): {(tuple(thresholds or ()),)}.")
        self._loss_reduction = check_loss_reduction(loss_reduction)
        if loss_fn:
            losses.check_loss_fn(loss_fn)
        self._weight_column, self._loss_fn, self._name = weight_column, loss_fn, name

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def logits_dimension(self) -> int:
        return 1

    @property
    def loss_reduction(self) -> str:
        return self._loss_reduction

    def _labels(self, logits: Any, labels: Any) -> Any:
        import tensorflow as tf

        labels = shapes.check_labels(labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = class_ids_of(labels, self._label_vocabulary)
        return shapes.check_label_range(tf.cast(labels, tf.float32), 2)

    def _unweighted_loss_and_weights(self, logits: Any, labels: Any, features: Any
                                     ) -> tuple[Any, Any]:
        import tensorflow as tf

        if self._loss_fn:
            unweighted = losses.call_loss_fn(self._loss_fn, labels, logits, features, 1)
        else:
            if not logits.shape.is_compatible_with(labels.shape):
                raise ValueError(f"logits and labels must have the same shape "
                                 f"({logits.shape} vs {labels.shape}): one label per logit, "
                                 "the same batch in both")
            unweighted = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels,
                                                                 logits=logits)
        return unweighted, losses.example_weights(features, self._weight_column, logits)

    def loss(self, labels: Any, logits: Any, features: Any = None, mode: Any = None,
             regularization_losses: Any = None) -> Any:
        """The regularized training loss (the weighted sigmoid cross-entropy, reduced)."""
        import tensorflow as tf

        with tf.compat.v1.name_scope("losses"):
            logits = shapes.check_logits(logits, 1)
            labels = self._labels(logits, labels)
            unweighted, weights = self._unweighted_loss_and_weights(logits, labels, features)
            loss = losses.reduce_loss(unweighted, weights, self._loss_reduction)
            return losses.regularized(loss, regularization_losses)

    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """The predictions named in `keys` (all of them by default), by key."""
        import tensorflow as tf

        keys = check_prediction_keys(keys, _VALID_KEYS)
        logits = shapes.check_logits(logits, 1)
        found = {}
        with tf.compat.v1.name_scope("predictions"):
            if _P.LOGITS in keys:
                found[_P.LOGITS] = logits
            if _P.LOGISTIC in keys:
                found[_P.LOGISTIC] = tf.math.sigmoid(logits, name=_P.LOGISTIC)
            two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1,
                                         name="two_class_logits")
            if _P.PROBABILITIES in keys:
                found[_P.PROBABILITIES] = tf.nn.softmax(two_class_logits,
                                                        name=_P.PROBABILITIES)
            found.update(predicted_classes(logits, two_class_logits, keys,
                                           self._label_vocabulary))
            if _P.ALL_CLASS_IDS in keys:
                found[_P.ALL_CLASS_IDS] = all_class_ids(logits, 2)
            if _P.ALL_CLASSES in keys:
                found[_P.ALL_CLASSES] = all_classes(logits, 2, self._label_vocabulary)
        return {key: found[key] for key in _VALID_KEYS if key in found}

    def metrics(self, regularization_losses: Any = None) -> dict:
        """New metric objects, by key (module doc)."""
        import tensorflow as tf

        key = self.metric_key
        with tf.compat.v1.name_scope("metrics"):
            label_mean = metrics.Mean(_K.LABEL_MEAN)
            made: dict = {
                key(_K.LOSS_MEAN): metrics.Mean(_K.LOSS_MEAN),
                key(_K.ACCURACY): metrics.Accuracy(_K.ACCURACY),
                key(_K.PRECISION): metrics.Precision(_K.PRECISION),
                key(_K.RECALL): metrics.Recall(_K.RECALL),
                key(_K.PREDICTION_MEAN): metrics.Mean(_K.PREDICTION_MEAN),
                key(_K.LABEL_MEAN): label_mean,
                key(_K.ACCURACY_BASELINE): metrics.AccuracyBaseline(_K.ACCURACY_BASELINE,
                                                                    label_mean),
                key(_K.AUC): AUC(_K.AUC),
                key(_K.AUC_PR): AUC(_K.AUC_PR, curve="PR"),
            }
            if regularization_losses is not None:
                made[key(_K.LOSS_REGULARIZATION)] = metrics.Mean(_K.LOSS_REGULARIZATION)
            for threshold in self._thresholds:
                for template, kind in ((_K.ACCURACY_AT_THRESHOLD, metrics.BinaryAccuracy),
                                       (_K.PRECISION_AT_THRESHOLD, metrics.Precision),
                                       (_K.RECALL_AT_THRESHOLD, metrics.Recall)):
                    name = key(template % threshold)
                    made[name] = kind(name, threshold)
        return made

    def update_metrics(self, eval_metrics: dict, features: Any, logits: Any, labels: Any,
                       regularization_losses: Any = None, mode: Any = None) -> dict:
        """`eval_metrics` (from `metrics()`) updated with one batch."""
        import tensorflow as tf

        key = self.metric_key
        class_ids = self.predictions(logits, [_P.CLASS_IDS])[_P.CLASS_IDS]
        logits = shapes.check_logits(logits, 1)
        labels = self._labels(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, labels, features)
        logistic = self.predictions(logits, [_P.LOGISTIC])[_P.LOGISTIC]
        eval_metrics[key(_K.LOSS_MEAN)].update_state(unweighted, sample_weight=weights)
        for name in (_K.ACCURACY, _K.PRECISION, _K.RECALL):
            eval_metrics[key(name)].update_state(labels, class_ids, sample_weight=weights)
        eval_metrics[key(_K.PREDICTION_MEAN)].update_state(
            logistic, sample_weight=_broadcast(weights, logistic))
        eval_metrics[key(_K.LABEL_MEAN)].update_state(
            labels, sample_weight=_broadcast(weights, labels))
        eval_metrics[key(_K.ACCURACY_BASELINE)].update_state()
        for name in (_K.AUC, _K.AUC_PR):
            eval_metrics[key(name)].update_state(labels, logistic,
                                                 sample_weight=_broadcast(weights, logistic))
        if regularization_losses is not None:
            eval_metrics[key(_K.LOSS_REGULARIZATION)].update_state(
                tf.math.add_n(list(regularization_losses)))
        for threshold in self._thresholds:
            for template in (_K.ACCURACY_AT_THRESHOLD, _K.PRECISION_AT_THRESHOLD,
                             _K.RECALL_AT_THRESHOLD):
                eval_metrics[key(template % threshold)].update_state(
                    labels, logistic, sample_weight=weights)
        return eval_metrics

    def export_outputs(self, predictions: dict) -> dict:
        from trainexec.estimator_engine.export_outputs import PredictOutput, RegressionOutput

        classification = classification_output(predictions[_P.PROBABILITIES], 2,
                                               self._label_vocabulary)
        return {DEFAULT_SERVING_KEY: classification, CLASSIFY_SERVING_KEY: classification,
                REGRESS_SERVING_KEY: RegressionOutput(predictions[_P.LOGISTIC]),
                PREDICT_SERVING_KEY: PredictOutput(predictions)}


def _broadcast(weights: Any, values: Any) -> Any:
    """The weights at the values' shape (1.0, no weight column, stays as it is)."""
    import tensorflow as tf

    if isinstance(weights, float):
        return None if weights == 1.0 else weights
    return metrics.broadcast_weights(weights, tf.cast(values, tf.float32))


def classification_output(scores: Any, n_classes: int, vocabulary: Any) -> Any:
    """A `ClassificationOutput` of the class scores and every class's name."""
    from trainexec.estimator_engine.export_outputs import ClassificationOutput

    return ClassificationOutput(scores=scores,
                                classes=all_classes(scores, n_classes, vocabulary))
