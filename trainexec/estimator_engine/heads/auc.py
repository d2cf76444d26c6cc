"""`AUC`: the area under the ROC or precision-recall curve, streamed.

The curve is sampled at 200 evenly spaced thresholds (a hair below 0, the 198 inner
points k/199, a hair above 1), as tf.estimator 2.15's heads sample it. A batch adds
its weighted counts per threshold bucket: a prediction p (clipped to [0, 1]) lands in
bucket ceil(199 p) - 1 (0 at the least) and counts as positive at every threshold up
to its bucket's, so one pass and a reverse cumulative sum give every threshold's
true and false positives; negatives are the rest.

The area: ROC by trapezoids over (false positive rate, recall); precision-recall by
Davis & Goadrich's interpolation between neighbouring thresholds (precision varies
along a line in true positives between two thresholds, not linearly in recall),
which does not overstate the area the way trapezoids do.
"""

from __future__ import annotations

from typing import Any

from trainexec.estimator_engine.heads.metrics import Metric, confusion_inputs

__all__ = ["AUC", "NUM_THRESHOLDS", "thresholds"]

NUM_THRESHOLDS = 200
_EPSILON = 1e-7


def thresholds(count: int = NUM_THRESHOLDS) -> list[float]:
    """The thresholds the curve is sampled at, lowest first."""
    inner = [(i + 1) * 1.0 / (count - 1) for i in range(count - 2)]
    return [0.0 - _EPSILON, *inner, 1.0 + _EPSILON]


class AUC(Metric):
    """Area under the ROC curve (`curve="ROC"`) or precision-recall curve ("PR")."""

    def __init__(self, name: str, curve: str = "ROC") -> None:
        if curve not in ("ROC", "PR"):
            raise ValueError(f'AUC curve must be "ROC" or "PR"; got {curve!r}')
        super().__init__(name)
        self.curve = curve
        self.thresholds = thresholds()
        shape = (NUM_THRESHOLDS,)
        self.true_positives = self._add_variable("true_positives", shape)
        self.false_positives = self._add_variable("false_positives", shape)
        self.true_negatives = self._add_variable("true_negatives", shape)
        self.false_negatives = self._add_variable("false_negatives", shape)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        import tensorflow as tf

        label_pos, y_pred, weights = confusion_inputs(y_true, y_pred, sample_weight)
        if weights is None:
            weights = tf.constant(1.0)
        positive = tf.cast(label_pos, tf.float32) * weights
        negative = (1.0 - tf.cast(label_pos, tf.float32)) * weights
        buckets = tf.math.ceil(tf.clip_by_value(y_pred, 0.0, 1.0) * (NUM_THRESHOLDS - 1))
        buckets = tf.cast(tf.nn.relu(buckets - 1), tf.int32)

        def above(counts: Any) -> Any:  # per threshold: the counts of predictions over it
            per_bucket = tf.math.unsorted_segment_sum(counts, buckets, NUM_THRESHOLDS)
            return tf.cumsum(per_bucket, reverse=True)

        tp, fp = above(positive), above(negative)
        return self._record(tf.group(
            self.true_positives.assign_add(tp),
            self.false_positives.assign_add(fp),
            self.true_negatives.assign_add(tf.reduce_sum(negative) - fp),
            self.false_negatives.assign_add(tf.reduce_sum(positive) - tp)))

    def result(self) -> Any:
        import tensorflow as tf

        tp, fp = tf.identity(self.true_positives), tf.identity(self.false_positives)
        tn, fn = tf.identity(self.true_negatives), tf.identity(self.false_negatives)
        if self.curve == "PR":
            return _interpolated_pr_area(tp, fp, fn)
        recall = tf.math.divide_no_nan(tp, tp + fn)
        fp_rate = tf.math.divide_no_nan(fp, fp + tn)
        heights = (recall[:-1] + recall[1:]) / 2.0
        return tf.reduce_sum((fp_rate[:-1] - fp_rate[1:]) * heights)


def _interpolated_pr_area(tp: Any, fp: Any, fn: Any) -> Any:
    """The precision-recall area, interpolating each step between thresholds i (lower)
    and i + 1: along it precision is tp / p with tp = slope * p + intercept."""
    import tensorflow as tf

    predicted = tp + fp
    low_tp, high_tp = tp[:-1], tp[1:]
    low_p, high_p = predicted[:-1], predicted[1:]
    slope = tf.math.divide_no_nan(low_tp - high_tp, tf.maximum(low_p - high_p, 0))
    intercept = high_tp - slope * high_p
    both_positive = tf.logical_and(low_p > 0, high_p > 0)
    ratio = tf.where(both_positive, tf.math.divide_no_nan(low_p, tf.maximum(high_p, 0)),
                     tf.ones_like(high_p))
    step = tf.math.divide_no_nan(
        slope * ((low_tp - high_tp) + intercept * tf.math.log(ratio)),
        tf.maximum(high_tp + fn[1:], 0))
    return tf.reduce_sum(step)
