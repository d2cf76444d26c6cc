"""The metrics heads report, as objects that run eagerly and in an Estimator's graph.

Each metric keeps running sums in non-trainable float32 variables (in a graph: local
variables in the `METRIC_VARIABLES` collection, so every evaluation starts from zero
and no checkpoint holds them), `update_state(...)` adds a batch (and, in a graph,
returns the op that does, also kept in `updates`), `result()` is the value so far.
`EstimatorSpec` takes them in `eval_metric_ops` as it takes Keras metrics.

The arithmetic is tf.estimator 2.15's (Keras 2's metrics), so the values agree to
float rounding on every TensorFlow line and with either Keras:

* `Mean`: sum(values * weights) / sum(weights), weights broadcast to the values
  (a weight of rank one more, ending in 1, is squeezed; of rank one less, expanded);
* `Accuracy`, `BinaryAccuracy(threshold)`: the weighted mean of matches (binary: of
  the per-row mean of `(prediction > threshold) == label`);
* `Precision(threshold)`, `Recall(threshold)`: weighted true/false positives and false
  negatives, a label counting as positive when non-zero;
* `AUC(curve)` (its own module, `auc`): ROC or precision-recall, over 200 evenly
  spaced thresholds;
* `AccuracyBaseline(label_mean)`: max(mean label, 1 - mean label), from a `Mean` of
  the labels (what always predicting the commoner class scores).

No Keras is imported: the heads work under tf_keras, Keras 3 and on TF 2.15 alike.

Example:
    ```python
    mean = Mean("average_loss")
    update_op = mean.update_state(losses, sample_weight=weights)
    value = mean.result()
    ```
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["Accuracy", "AccuracyBaseline", "BinaryAccuracy", "Mean", "Metric", "Precision",
           "Recall", "align_weights", "broadcast_weights", "confusion_inputs"]


class _NotBroadcastable(ValueError):
    pass


def align_weights(values: Any, weights: Any) -> Any:
    """`weights` squeezed or expanded by one trailing dimension to the rank of
    `values` (static ranks; a scalar or an unknown rank is left as it is)."""
    import tensorflow as tf

    values_rank, weights_rank = values.shape.rank, weights.shape.rank
    if weights_rank in (0, None) or values_rank is None:
        return weights
    if weights_rank - values_rank == 1:
        return tf.squeeze(weights, [-1])
    if values_rank - weights_rank == 1:
        return tf.expand_dims(weights, -1)
    return weights


def broadcast_weights(weights: Any, values: Any) -> Any:
    """`weights` at the shape of `values`; `_NotBroadcastable` (a ValueError) when the
    static shapes cannot broadcast (a dimension neither 1 nor the value's)."""
    import tensorflow as tf

    w_shape, v_shape = weights.shape, values.shape
    if w_shape.is_fully_defined() and v_shape.is_fully_defined() and w_shape == v_shape:
        return weights
    if w_shape.rank not in (0, None) and v_shape.rank is not None:
        if w_shape.rank != v_shape.rank or any(
                w is not None and v is not None and w not in (1, v)
                for w, v in zip(w_shape.as_list(), v_shape.as_list())):
            raise _NotBroadcastable(f"weights of shape {w_shape} cannot be broadcast to "
                                    f"values of shape {v_shape}")
    return weights * tf.ones_like(values)


class Metric:
    """A running metric: float32 variables, `update_state`, `result`, `reset_state`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.updates: list[Any] = []  # in a graph: the update ops made so far
        self._variables: list[Any] = []

    def _add_variable(self, name: str, shape: tuple = ()) -> Any:
        import tensorflow as tf

        zeros = tf.zeros(shape, tf.float32)
        if tf.executing_eagerly():
            variable = tf.Variable(zeros, trainable=False, name=name)
        else:
            keys = tf.compat.v1.GraphKeys
            with tf.init_scope():
                variable = tf.compat.v1.Variable(
                    zeros, trainable=False, name=name, use_resource=True,
                    collections=[keys.LOCAL_VARIABLES, keys.METRIC_VARIABLES])
        self._variables.append(variable)
        return variable

    @property
    def variables(self) -> list[Any]:
        """The variables holding the running sums."""
        return list(self._variables)

    def _record(self, op: Any) -> Any:
        import tensorflow as tf

        if not tf.executing_eagerly():
            self.updates.append(op)
        return op

    def result(self) -> Any:
        """The metric's value so far (a float32 scalar Tensor)."""
        raise NotImplementedError

    def reset_state(self) -> Any:
        """Every running sum back to zero."""
        import tensorflow as tf

        return tf.group(*[v.assign(tf.zeros_like(v)) for v in self._variables])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class _WeightedMean(Metric):
    """total / count, the running sums of weighted values and of weights."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.total = self._add_variable("total")
        self.count = self._add_variable("count")

    def _add(self, values: Any, sample_weight: Any = None) -> Any:
        import tensorflow as tf

        values = tf.cast(values, tf.float32)
        if sample_weight is None:
            count = tf.cast(tf.size(values), tf.float32)
        else:
            weights = align_weights(values, tf.cast(sample_weight, tf.float32))
            try:
                weights = broadcast_weights(weights, values)
            except _NotBroadcastable:  # average the extra trailing dimensions first
                values = tf.reduce_mean(values, axis=list(range(weights.shape.rank,
                                                                values.shape.rank)))
            values = values * weights
            count = tf.reduce_sum(weights)
        return self._record(tf.group(self.total.assign_add(tf.reduce_sum(values)),
                                     self.count.assign_add(count)))

    def result(self) -> Any:
        import tensorflow as tf

        return tf.math.divide_no_nan(tf.identity(self.total), tf.identity(self.count))


class Mean(_WeightedMean):
    """The weighted mean of every value given (module doc)."""

    def update_state(self, values: Any, sample_weight: Any = None) -> Any:
        """Adds `values`, each with its weight (1 by default)."""
        return self._add(values, sample_weight)


def _squeeze_pair(y_true: Any, y_pred: Any) -> tuple[Any, Any]:
    """Labels and predictions of one rank: a trailing dimension of 1 dropped from the
    one of higher rank (static ranks)."""
    import tensorflow as tf

    true_rank, pred_rank = y_true.shape.rank, y_pred.shape.rank
    if true_rank is None or pred_rank is None:
        return y_true, y_pred
    if pred_rank - true_rank == 1 and y_pred.shape[-1] == 1:
        y_pred = tf.squeeze(y_pred, [-1])
    elif true_rank - pred_rank == 1 and y_true.shape[-1] == 1:
        y_true = tf.squeeze(y_true, [-1])
    return y_true, y_pred


def confusion_inputs(y_true: Any, y_pred: Any, sample_weight: Any) -> tuple[Any, Any, Any]:
    """(labels as booleans, predictions, weights or None), each flattened to one
    dimension, the weights broadcast to the predictions first."""
    import tensorflow as tf

    y_true, y_pred = _squeeze_pair(tf.cast(y_true, tf.float32), tf.cast(y_pred, tf.float32))
    weights = None
    if sample_weight is not None:
        weights = align_weights(y_pred, tf.cast(sample_weight, tf.float32))
        weights = tf.reshape(broadcast_weights(weights, y_pred), [-1])
    y_pred.shape.assert_is_compatible_with(y_true.shape)
    return (tf.reshape(tf.cast(y_true, tf.bool), [-1]), tf.reshape(y_pred, [-1]), weights)


class _MeanOfMatches(_WeightedMean):
    def __init__(self, name: str, matches: Callable[[Any, Any], Any]) -> None:
        super().__init__(name)
        self._matches = matches

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        import tensorflow as tf

        y_true, y_pred = _squeeze_pair(tf.cast(y_true, tf.float32),
                                       tf.cast(y_pred, tf.float32))
        return self._add(self._matches(y_true, y_pred), sample_weight)


class Accuracy(_MeanOfMatches):
    """How often the predicted class equals the label (weighted)."""

    def __init__(self, name: str) -> None:
        import tensorflow as tf

        super().__init__(name, lambda y_true, y_pred: tf.cast(tf.equal(y_true, y_pred),
                                                              tf.float32))


class BinaryAccuracy(_MeanOfMatches):
    """How often `prediction > threshold` equals the label, averaged per row first."""

    def __init__(self, name: str, threshold: float = 0.5) -> None:
        import tensorflow as tf

        def matches(y_true: Any, y_pred: Any) -> Any:
            predicted = tf.cast(y_pred > threshold, tf.float32)
            return tf.reduce_mean(tf.cast(tf.equal(y_true, predicted), tf.float32), -1)

        super().__init__(name, matches)
        self.threshold = threshold


class _AtThreshold(Metric):
    """Weighted true positives and one other count at one threshold."""

    def __init__(self, name: str, threshold: float, other: str) -> None:
        super().__init__(name)
        self.threshold = threshold
        self.true_positives = self._add_variable("true_positives")
        self._other = self._add_variable(other)

    def _counts(self, label_pos: Any, pred_pos: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        import tensorflow as tf

        label_pos, y_pred, weights = confusion_inputs(y_true, y_pred, sample_weight)
        pred_pos = y_pred > self.threshold
        sums = []
        for variable, hit in zip((self.true_positives, self._other),
                                 self._counts(label_pos, pred_pos)):
            hit = tf.cast(hit, tf.float32)
            sums.append(variable.assign_add(tf.reduce_sum(
                hit if weights is None else hit * weights)))
        return self._record(tf.group(*sums))

    def result(self) -> Any:
        import tensorflow as tf

        tp = tf.identity(self.true_positives)
        return tf.math.divide_no_nan(tp, tp + tf.identity(self._other))


class Precision(_AtThreshold):
    """Weighted true positives over predicted positives (`prediction > threshold`)."""

    def __init__(self, name: str, threshold: float = 0.5) -> None:
        super().__init__(name, threshold, "false_positives")

    def _counts(self, label_pos: Any, pred_pos: Any) -> tuple[Any, Any]:
        import tensorflow as tf

        return (tf.logical_and(label_pos, pred_pos),
                tf.logical_and(tf.logical_not(label_pos), pred_pos))


class Recall(_AtThreshold):
    """Weighted true positives over actual positives (non-zero labels)."""

    def __init__(self, name: str, threshold: float = 0.5) -> None:
        super().__init__(name, threshold, "false_negatives")

    def _counts(self, label_pos: Any, pred_pos: Any) -> tuple[Any, Any]:
        import tensorflow as tf

        return (tf.logical_and(label_pos, pred_pos),
                tf.logical_and(label_pos, tf.logical_not(pred_pos)))


class AccuracyBaseline(Metric):
    """max(mean label, 1 - mean label), read from the `Mean` of the (0/1) labels."""

    def __init__(self, name: str, label_mean: Mean) -> None:
        super().__init__(name)
        self._label_mean = label_mean

    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        """Nothing to add: the label mean holds the sums (it is updated beside)."""
        import tensorflow as tf

        return self._record(tf.no_op())

    def result(self) -> Any:
        import tensorflow as tf

        total = tf.identity(self._label_mean.total)
        count = tf.identity(self._label_mean.count)
        return tf.math.divide_no_nan(tf.maximum(total, count - total), count)
