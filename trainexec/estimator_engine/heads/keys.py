"""The names heads give things: metric keys, prediction keys, signature keys, loss
reductions.

Every string is tf.estimator's, so evaluation results, prediction dicts and SavedModel
signatures read the same whichever Estimator made them. `MetricKeys.ACCURACY_AT_THRESHOLD
% 0.5` gives `accuracy/positive_threshold_0.5`; a named head appends `/<name>` to each
metric key (`Head.metric_key`).

Example:
    ```python
    results = estimator.evaluate(input_fn)
    results[MetricKeys.AUC], results[MetricKeys.LOSS_MEAN]
    ```
"""

from __future__ import annotations

__all__ = ["CLASSIFY_SERVING_KEY", "DEFAULT_SERVING_KEY", "LossReduction", "MetricKeys",
           "PREDICT_SERVING_KEY", "PredictionKeys", "REGRESS_SERVING_KEY",
           "check_loss_reduction"]

DEFAULT_SERVING_KEY = "serving_default"  # tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
CLASSIFY_SERVING_KEY = "classification"
REGRESS_SERVING_KEY = "regression"
PREDICT_SERVING_KEY = "predict"


class MetricKeys:
    """The keys of the metrics heads report (tf.estimator's strings)."""

    LOSS = "loss"
    LOSS_MEAN = "average_loss"
    LOSS_REGULARIZATION = "regularization_loss"
    ACCURACY = "accuracy"
    PRECISION = "precision"
    RECALL = "recall"
    ACCURACY_BASELINE = "accuracy_baseline"  # always predicting the commoner class
    AUC = "auc"
    AUC_PR = "auc_precision_recall"
    LABEL_MEAN = "label/mean"
    PREDICTION_MEAN = "prediction/mean"
    ACCURACY_AT_THRESHOLD = "accuracy/positive_threshold_%g"
    PRECISION_AT_THRESHOLD = "precision/positive_threshold_%g"
    RECALL_AT_THRESHOLD = "recall/positive_threshold_%g"
    PRECISION_AT_RECALL = "precision_at_recall_%g"
    RECALL_AT_PRECISION = "recall_at_precision_%g"
    SENSITIVITY_AT_SPECIFICITY = "sensitivity_at_specificity_%g"
    SPECIFICITY_AT_SENSITIVITY = "specificity_at_sensitivity_%g"
    PROBABILITY_MEAN_AT_CLASS = "probability_mean/class%d"
    AUC_AT_CLASS = "auc/class%d"
    AUC_PR_AT_CLASS = "auc_precision_recall/class%d"
    PROBABILITY_MEAN_AT_NAME = "probability_mean/%s"
    AUC_AT_NAME = "auc/%s"
    AUC_PR_AT_NAME = "auc_precision_recall/%s"


class PredictionKeys:
    """The keys of the predictions heads make (tf.estimator's strings)."""

    CLASSES = "classes"
    CLASS_IDS = "class_ids"
    ALL_CLASSES = "all_classes"
    ALL_CLASS_IDS = "all_class_ids"
    LOGISTIC = "logistic"
    LOGITS = "logits"
    PREDICTIONS = "predictions"
    PROBABILITIES = "probabilities"
    TOP_K = "top_k"


class LossReduction:
    """How a head reduces the batch's weighted losses to the training loss (the values
    of `tf.losses.Reduction`, which may be given instead)."""

    AUTO = "auto"  # as SUM_OVER_BATCH_SIZE
    NONE = "none"  # refused: a head's loss is one number
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)


def check_loss_reduction(loss_reduction: object) -> str:
    """`loss_reduction` as a reduction name; ValueError for NONE or an unknown one."""
    if loss_reduction not in LossReduction.all() or loss_reduction == LossReduction.NONE:
        raise ValueError(
            f"Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` for valid "
            f"options: a head's `loss_reduction` is one of {LossReduction.SUM_OVER_BATCH_SIZE!r}"
            f" (the default), {LossReduction.SUM!r} or {LossReduction.AUTO!r} "
            "(tf.losses.Reduction.SUM_OVER_BATCH_SIZE, SUM, AUTO)")
    return str(loss_reduction)
