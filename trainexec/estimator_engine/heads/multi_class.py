"""`MultiClassHead`: one label per example among `n_classes` (> 2), softmax
cross-entropy.

Logits are `[D0, ... DN, n_classes]`; labels `[D0, ... DN, 1]` (or `[D0, ... DN]`):
integer class ids, or strings of `label_vocabulary` (`n_classes` names). Predictions:
`logits`, `probabilities` (softmax), `class_ids`, `classes`, `all_class_ids`,
`all_classes`. Metrics: `accuracy`, `average_loss` (and `regularization_loss`).
Signatures: `serving_default` and `classification`, `predict`.

Example:
    ```python
    head = MultiClassHead(n_classes=3, label_vocabulary=["a", "b", "c"])
    ```
"""

from __future__ import annotations

from typing import Any, Callable

from trainexec.estimator_engine.heads import losses, metrics, shapes
from trainexec.estimator_engine.heads.base import (SingleHead, check_prediction_keys,
                                                   predicted_classes)
from trainexec.estimator_engine.heads.binary_class import classification_output
from trainexec.estimator_engine.heads.keys import (CLASSIFY_SERVING_KEY, DEFAULT_SERVING_KEY,
                                                   PREDICT_SERVING_KEY, LossReduction,
                                                   MetricKeys, PredictionKeys,
                                                   check_loss_reduction)
from trainexec.estimator_engine.heads.vocabulary import (all_class_ids, all_classes,
                                                         check_vocabulary, class_ids_of)

__all__ = ["MultiClassHead", "check_n_classes"]

_K, _P = MetricKeys, PredictionKeys
_VALID_KEYS = [_P.LOGITS, _P.PROBABILITIES, _P.CLASS_IDS, _P.CLASSES, _P.ALL_CLASS_IDS,
               _P.ALL_CLASSES]


def check_n_classes(n_classes: Any) -> Any:
    """`n_classes` when it is more than 2 (a Tensor is checked when it runs)."""
    import tensorflow as tf

    if n_classes is None:
        raise ValueError("n_classes cannot be None: MultiClassHead needs the number of "
                         "classes, e.g. MultiClassHead(n_classes=3)")
    if isinstance(n_classes, int):
        if n_classes <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes}. For two classes use "
                             "BinaryClassHead")
        return n_classes
    tf.compat.v1.debugging.assert_greater(tf.convert_to_tensor(n_classes), 2,
                                          message="n_classes must be greater than 2")
    return n_classes


class MultiClassHead(SingleHead):
    """A head for multi-class classification (module doc).

    Args:
        n_classes: the number of classes, more than 2.
        weight_column: a feature name or `tf.feature_column.numeric_column` of example
            weights, or None.
        label_vocabulary: the `n_classes` class names, when labels are strings.
        loss_reduction: `sum_over_batch_size` (default), `sum` or `auto`.
        loss_fn: `loss_fn(labels, logits[, features, loss_reduction])` returning the
            unreduced loss `[D0, ... DN, 1]` (labels are class ids).
        name: suffix of the metric keys and the ops' name scope.
    """

    def __init__(self, n_classes: int, weight_column: Any = None,
                 label_vocabulary: Any = None,
                 loss_reduction: str = LossReduction.SUM_OVER_BATCH_SIZE,
                 loss_fn: Callable | None = None, name: str | None = None) -> None:
        if n_classes is None:
            check_n_classes(n_classes)
        check_vocabulary(label_vocabulary)
        if label_vocabulary is not None and len(label_vocabulary) != n_classes:
            raise ValueError(
                f'"label_vocabulary" does not have "n_classes" items. '
                f"len(label_vocabulary)={len(label_vocabulary)}, n_classes={n_classes}, "
                f"label_vocabulary={label_vocabulary}. Name each class once, in class-id "
                "order")
        self._loss_reduction = check_loss_reduction(loss_reduction)
        if loss_fn:
            losses.check_loss_fn(loss_fn)
        self._n_classes = check_n_classes(n_classes)
        self._label_vocabulary = label_vocabulary
        self._weight_column, self._loss_fn, self._name = weight_column, loss_fn, name

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def logits_dimension(self) -> Any:
        return self._n_classes

    @property
    def loss_reduction(self) -> str:
        return self._loss_reduction

    def _label_ids(self, logits: Any, labels: Any) -> Any:
        import tensorflow as tf

        labels = shapes.check_labels(labels, logits, 1)
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got "
                                 f"{labels.dtype}. Give class ids (tf.cast(labels, "
                                 "tf.int64)), or string labels with label_vocabulary")
            ids = labels
        else:
            if labels.dtype != tf.string:
                raise ValueError(f"Labels dtype should be string if there is a vocabulary. "
                                 f"Instead got {labels.dtype}. Give the class names, or "
                                 "drop label_vocabulary to give class ids")
            ids = class_ids_of(labels, self._label_vocabulary)
        return shapes.check_label_range(ids, self._n_classes)

    def _unweighted_loss_and_weights(self, logits: Any, label_ids: Any, features: Any
                                     ) -> tuple[Any, Any]:
        import tensorflow as tf

        if self._loss_fn:
            unweighted = losses.call_loss_fn(self._loss_fn, label_ids, logits, features, 1)
        else:
            unweighted = tf.expand_dims(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.squeeze(label_ids, axis=[-1]), logits=logits), -1)
        return unweighted, losses.example_weights(features, self._weight_column, logits)

    def loss(self, labels: Any, logits: Any, features: Any = None, mode: Any = None,
             regularization_losses: Any = None) -> Any:
        """The regularized training loss (weighted softmax cross-entropy, reduced)."""
        import tensorflow as tf

        with tf.compat.v1.name_scope("losses"):
            logits = shapes.check_logits(logits, self._n_classes)
            label_ids = self._label_ids(logits, labels)
            unweighted, weights = self._unweighted_loss_and_weights(logits, label_ids,
                                                                    features)
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
                found[_P.PROBABILITIES] = tf.nn.softmax(logits, name=_P.PROBABILITIES)
            found.update(predicted_classes(logits, logits, keys, self._label_vocabulary))
            if _P.ALL_CLASS_IDS in keys:
                found[_P.ALL_CLASS_IDS] = all_class_ids(logits, self._n_classes)
            if _P.ALL_CLASSES in keys:
                found[_P.ALL_CLASSES] = all_classes(logits, self._n_classes,
                                                    self._label_vocabulary)
        return {key: found[key] for key in _VALID_KEYS if key in found}

    def metrics(self, regularization_losses: Any = None) -> dict:
        """New metric objects: average loss, accuracy (and regularization loss)."""
        import tensorflow as tf

        key = self.metric_key
        with tf.compat.v1.name_scope("metrics"):
            made: dict = {key(_K.LOSS_MEAN): metrics.Mean(_K.LOSS_MEAN)}
            if regularization_losses is not None:
                made[key(_K.LOSS_REGULARIZATION)] = metrics.Mean(_K.LOSS_REGULARIZATION)
            made[key(_K.ACCURACY)] = metrics.Accuracy(_K.ACCURACY)
        return made

    def update_metrics(self, eval_metrics: dict, features: Any, logits: Any, labels: Any,
                       regularization_losses: Any = None, mode: Any = None) -> dict:
        """`eval_metrics` (from `metrics()`) updated with one batch."""
        import tensorflow as tf

        key = self.metric_key
        class_ids = self.predictions(logits, [_P.CLASS_IDS])[_P.CLASS_IDS]
        logits = shapes.check_logits(logits, self._n_classes)
        label_ids = self._label_ids(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, label_ids, features)
        eval_metrics[key(_K.LOSS_MEAN)].update_state(unweighted, sample_weight=weights)
        eval_metrics[key(_K.ACCURACY)].update_state(label_ids, class_ids,
                                                    sample_weight=weights)
        if regularization_losses is not None:
            eval_metrics[key(_K.LOSS_REGULARIZATION)].update_state(
                tf.math.add_n(list(regularization_losses)))
        return eval_metrics

    def export_outputs(self, predictions: dict) -> dict:
        from trainexec.estimator_engine.export_outputs import PredictOutput

        classification = classification_output(predictions[_P.PROBABILITIES],
                                               self._n_classes, self._label_vocabulary)
        return {DEFAULT_SERVING_KEY: classification, CLASSIFY_SERVING_KEY: classification,
                PREDICT_SERVING_KEY: PredictOutput(predictions)}
