"""`MultiLabelHead`: any number of `n_classes` (> 1) labels per example, sigmoid
cross-entropy averaged over the classes.

Logits are `[D0, ... DN, n_classes]`. Labels: a multi-hot `[D0, ... DN, n_classes]`
Tensor of 0/1, or a SparseTensor of class ids (integers in `[0, n_classes)`, or
strings of `label_vocabulary`). Predictions: `logits`, `probabilities` (sigmoid per
class), `classes` (every class's name). Metrics: `average_loss`, `auc`,
`auc_precision_recall`, per threshold accuracy, precision and recall, and for each of
`classes_for_class_based_metrics` the class's mean probability, AUC and PR AUC
(`probability_mean/class<id>` or `/<name>` with a vocabulary). Signatures:
`serving_default` and `classification`, `predict`.

Example:
    ```python
    head = MultiLabelHead(n_classes=3, classes_for_class_based_metrics=[0, 2])
    ```
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from trainexec.estimator_engine.heads import losses, metrics, shapes
from trainexec.estimator_engine.heads.auc import AUC
from trainexec.estimator_engine.heads.base import SingleHead, check_prediction_keys
from trainexec.estimator_engine.heads.binary_class import (check_thresholds,
                                                           classification_output)
from trainexec.estimator_engine.heads.keys import (CLASSIFY_SERVING_KEY, DEFAULT_SERVING_KEY,
                                                   PREDICT_SERVING_KEY, LossReduction,
                                                   MetricKeys, PredictionKeys,
                                                   check_loss_reduction)
from trainexec.estimator_engine.heads.vocabulary import (all_classes, check_vocabulary,
                                                         class_ids_of)

__all__ = ["MultiLabelHead"]

_K, _P = MetricKeys, PredictionKeys
_VALID_KEYS = [_P.LOGITS, _P.PROBABILITIES, _P.CLASSES]


def _class_ids(classes: Any, n_classes: int, vocabulary: Any) -> tuple[int, ...]:
    """`classes_for_class_based_metrics` as class ids (names looked up)."""
    classes = tuple(classes) if classes else ()
    if classes and isinstance(classes[0], str):
        if not vocabulary:
            raise ValueError("label_vocabulary must be provided when "
                             "classes_for_class_based_metrics are strings. Give the class "
                             "names as label_vocabulary, or the classes as ids")
        return tuple(list(vocabulary).index(name) for name in classes)
    for class_id in classes:
        if class_id < 0 or class_id >= n_classes:
            raise ValueError(f"All classes_for_class_based_metrics must be in range [0, "
                             f"{n_classes - 1}]. Given: {class_id}. They are class ids "
                             f"of this head's {n_classes} classes")
    return classes


class MultiLabelHead(SingleHead):
    """A head for multi-label classification (module doc).

    Args:
        n_classes: the number of classes, more than 1.
        weight_column: a feature name or `tf.feature_column.numeric_column` of example
            weights, or None.
        thresholds: probabilities in (0, 1); each adds accuracy, precision and recall.
        label_vocabulary: the class names, when SparseTensor labels are strings.
        loss_reduction: `sum_over_batch_size` (default), `sum` or `auto`.
        loss_fn: `loss_fn(labels, logits[, features])` returning the unreduced loss
            `[D0, ... DN, 1]` (labels are multi-hot).
        classes_for_class_based_metrics: class ids or names with metrics of their own.
        name: suffix of the metric keys and the ops' name scope.
    """

    def __init__(self, n_classes: int, weight_column: Any = None,
                 thresholds: Iterable[float] | None = None, label_vocabulary: Any = None,
                 loss_reduction: str = LossReduction.SUM_OVER_BATCH_SIZE,
                 loss_fn: Callable | None = None,
                 classes_for_class_based_metrics: Any = None,
                 name: str | None = None) -> None:
        if n_classes is None or n_classes < 2:
            raise ValueError(f"n_classes must be > 1 for multi-label classification. Given: "
                             f"{n_classes}. For one class use BinaryClassHead")
        self._thresholds = check_thresholds(
            thresholds, lambda bad: f"thresholds must be in (0, 1) range. Given: {bad}.")
        check_vocabulary(label_vocabulary, words="label_vocabulary must be a list or tuple")
        if label_vocabulary is not None and len(label_vocabulary) != n_classes:
            raise ValueError(f"Length of label_vocabulary must be n_classes ({n_classes}). "
                             f"Given: {len(label_vocabulary)}. Name each class once")
        if loss_fn:
            losses.check_loss_fn(loss_fn)
        self._loss_reduction = check_loss_reduction(loss_reduction)
        self._per_class = _class_ids(classes_for_class_based_metrics, n_classes,
                                     label_vocabulary)
        self._n_classes, self._label_vocabulary = n_classes, label_vocabulary
        self._weight_column, self._loss_fn, self._name = weight_column, loss_fn, name

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def logits_dimension(self) -> int:
        return self._n_classes

    @property
    def loss_reduction(self) -> str:
        return self._loss_reduction

    def _class_keys(self, class_id: int) -> tuple[str, str, str]:
        if self._label_vocabulary is None:
            return (_K.PROBABILITY_MEAN_AT_CLASS % class_id, _K.AUC_AT_CLASS % class_id,
                    _K.AUC_PR_AT_CLASS % class_id)
        name = self._label_vocabulary[class_id]
        return (_K.PROBABILITY_MEAN_AT_NAME % name, _K.AUC_AT_NAME % name,
                _K.AUC_PR_AT_NAME % name)

    def _labels(self, logits: Any, labels: Any) -> Any:
        """Multi-hot int64 labels `[D0, ... DN, n_classes]`."""
        import tensorflow as tf

        if labels is None:
            raise ValueError(shapes.LABEL_NONE_ERR)
        if isinstance(labels, tf.SparseTensor):
            values = labels.values
            if labels.dtype == tf.string:
                ids = tf.SparseTensor(labels.indices,
                                      class_ids_of(values, self._label_vocabulary or ()),
                                      labels.dense_shape)
                hot = tf.sparse.to_indicator(ids, self._n_classes)
            else:
                if not values.dtype.is_integer:
                    raise ValueError(f"Labels dtype should be integer. Instead got "
                                     f"{values.dtype}. SparseTensor labels hold class ids")
                checked = shapes.check_label_range(
                    values, self._n_classes,
                    message=f"labels must be an integer SparseTensor with values in "
                            f"[0, {self._n_classes})")
                with tf.control_dependencies([] if tf.executing_eagerly() else [checked]):
                    hot = tf.sparse.to_indicator(labels, self._n_classes)
            processed = tf.cast(hot, tf.int64)
        else:
            processed = shapes.check_label_range(
                tf.convert_to_tensor(labels), 2,
                message="labels must be an integer indicator Tensor with values in [0, 1]")
        return shapes.check_labels(processed, logits, self._n_classes)

    def _unweighted_loss_and_weights(self, logits: Any, labels: Any, features: Any
                                     ) -> tuple[Any, Any]:
        import tensorflow as tf

        if self._loss_fn:
            unweighted = losses.call_loss_fn(self._loss_fn, labels, logits, features, 1)
        else:
            per_class = tf.nn.sigmoid_cross_entropy_with_logits(
                labels=tf.cast(labels, logits.dtype), logits=logits)
            unweighted = tf.reduce_mean(per_class, axis=-1, keepdims=True)
        return unweighted, losses.example_weights(features, self._weight_column, logits)

    def loss(self, labels: Any, logits: Any, features: Any = None, mode: Any = None,
             regularization_losses: Any = None) -> Any:
        """The regularized training loss (the class-averaged loss, weighted, reduced)."""
        import tensorflow as tf

        with tf.compat.v1.name_scope("losses"):
            logits = shapes.check_logits(logits, self._n_classes)
            labels = self._labels(logits, labels)
            unweighted, weights = self._unweighted_loss_and_weights(logits, labels, features)
            loss = losses.reduce_loss(unweighted, weights, self._loss_reduction)
            return losses.regularized(loss, regularization_losses)

    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """The predictions named in `keys` (all of them by default), by key."""
        import tensorflow as tf

        keys = check_prediction_keys(keys, _VALID_KEYS)
        logits = shapes.check_logits(logits, self._n_classes)
        found = {}
        with tf.compat.v1.name_scope("predictions"):
            if _P.LOGITS in keys:
                found[_P.LOGITS] = logits
            if _P.PROBABILITIES in keys:
                found[_P.PROBABILITIES] = tf.math.sigmoid(logits, name=_P.PROBABILITIES)
            if _P.CLASSES in keys:
                found[_P.CLASSES] = all_classes(logits, self._n_classes,
                                                self._label_vocabulary)
        return found

    def metrics(self, regularization_losses: Any = None) -> dict:
        """New metric objects, by key (module doc)."""
        import tensorflow as tf

        key = self.metric_key
        with tf.compat.v1.name_scope("metrics"):
            made: dict = {key(_K.LOSS_MEAN): metrics.Mean(_K.LOSS_MEAN),
                          key(_K.AUC): AUC(_K.AUC),
                          key(_K.AUC_PR): AUC(_K.AUC_PR, curve="PR")}
            if regularization_losses is not None:
                made[key(_K.LOSS_REGULARIZATION)] = metrics.Mean(_K.LOSS_REGULARIZATION)
            for threshold in self._thresholds:
                for template, kind in ((_K.ACCURACY_AT_THRESHOLD, metrics.BinaryAccuracy),
                                       (_K.PRECISION_AT_THRESHOLD, metrics.Precision),
                                       (_K.RECALL_AT_THRESHOLD, metrics.Recall)):
                    name = key(template % threshold)
                    made[name] = kind(name, threshold)
            for class_id in self._per_class:
                mean_key, auc_key, pr_key = map(key, self._class_keys(class_id))
                made[mean_key] = metrics.Mean(mean_key)
                made[auc_key] = AUC(auc_key)
                made[pr_key] = AUC(pr_key, curve="PR")
        return made

    def update_metrics(self, eval_metrics: dict, features: Any, logits: Any, labels: Any,
                       regularization_losses: Any = None, mode: Any = None) -> dict:
        """`eval_metrics` (from `metrics()`) updated with one batch."""
        import tensorflow as tf

        key = self.metric_key
        logits = shapes.check_logits(logits, self._n_classes)
        labels = self._labels(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, labels, features)
        probabilities = self.predictions(logits, [_P.PROBABILITIES])[_P.PROBABILITIES]
        eval_metrics[key(_K.LOSS_MEAN)].update_state(unweighted, sample_weight=weights)
        for name in (_K.AUC, _K.AUC_PR):
            eval_metrics[key(name)].update_state(labels, probabilities,
                                                 sample_weight=weights)
        if regularization_losses is not None:
            eval_metrics[key(_K.LOSS_REGULARIZATION)].update_state(
                tf.math.add_n(list(regularization_losses)))
        for threshold in self._thresholds:
            for template in (_K.ACCURACY_AT_THRESHOLD, _K.PRECISION_AT_THRESHOLD,
                             _K.RECALL_AT_THRESHOLD):
                eval_metrics[key(template % threshold)].update_state(
                    labels, probabilities, sample_weight=weights)
        for class_id in self._per_class:
            mean_key, auc_key, pr_key = map(key, self._class_keys(class_id))
            class_probabilities = probabilities[..., class_id:class_id + 1]
            class_labels = labels[..., class_id:class_id + 1]
            eval_metrics[mean_key].update_state(
                class_probabilities, sample_weight=None if isinstance(weights, float)
                else metrics.broadcast_weights(weights, class_probabilities))
            for name in (auc_key, pr_key):
                eval_metrics[name].update_state(class_labels, class_probabilities,
                                                sample_weight=weights)
        return eval_metrics

    def export_outputs(self, predictions: dict) -> dict:
        from trainexec.estimator_engine.export_outputs import PredictOutput

        classification = classification_output(predictions[_P.PROBABILITIES],
                                               self._n_classes, self._label_vocabulary)
        return {DEFAULT_SERVING_KEY: classification, CLASSIFY_SERVING_KEY: classification,
                PREDICT_SERVING_KEY: PredictOutput(predictions)}
