"""The heads' names: the metric key templates as the module documents them, the serving
signature keys, and `check_loss_reduction` (which names pass, which are refused, and the
refusal's guidance). The keys beside tf.estimator's own are compared, head by head, in
the heads' parity tests."""

import pytest
import tensorflow as tf

from trainexec.estimator_engine.heads import keys
from trainexec.estimator_engine.heads.keys import LossReduction, MetricKeys

pytestmark = pytest.mark.tf_line


def test_threshold_templates_print_the_threshold_shortest():
    assert MetricKeys.ACCURACY_AT_THRESHOLD % 0.5 == "accuracy/positive_threshold_0.5"
    assert MetricKeys.PRECISION_AT_THRESHOLD % 0.25 == "precision/positive_threshold_0.25"
    assert MetricKeys.RECALL_AT_THRESHOLD % 0.7 == "recall/positive_threshold_0.7"
    assert MetricKeys.PRECISION_AT_RECALL % 0.9 == "precision_at_recall_0.9"
    assert (MetricKeys.SENSITIVITY_AT_SPECIFICITY % 0.125
            == "sensitivity_at_specificity_0.125")


def test_per_class_templates_take_an_id_or_a_name():
    assert MetricKeys.PROBABILITY_MEAN_AT_CLASS % 2 == "probability_mean/class2"
    assert MetricKeys.AUC_AT_CLASS % 0 == "auc/class0"
    assert MetricKeys.AUC_PR_AT_CLASS % 11 == "auc_precision_recall/class11"
    assert MetricKeys.PROBABILITY_MEAN_AT_NAME % "spam" == "probability_mean/spam"
    assert MetricKeys.AUC_AT_NAME % "spam" == "auc/spam"
    assert MetricKeys.AUC_PR_AT_NAME % "spam" == "auc_precision_recall/spam"


def test_no_two_metric_or_prediction_keys_are_the_same():
    for kind in (MetricKeys, keys.PredictionKeys):
        values = [v for k, v in vars(kind).items() if k.isupper()]
        assert len(values) == len(set(values)), kind


def test_the_default_signature_key_is_the_saved_model_default():
    assert keys.DEFAULT_SERVING_KEY == tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
    assert len({keys.DEFAULT_SERVING_KEY, keys.CLASSIFY_SERVING_KEY,
                keys.REGRESS_SERVING_KEY, keys.PREDICT_SERVING_KEY}) == 4


@pytest.mark.parametrize("given", ["sum_over_batch_size", "sum", "auto"])
def test_the_reductions_a_head_can_use_pass_as_their_names(given):
    checked = keys.check_loss_reduction(given)
    assert checked == given and type(checked) is str


def test_keras_loss_reduction_values_may_be_given_instead():
    reduction = tf.keras.losses.Reduction
    assert keys.check_loss_reduction(reduction.SUM) == "sum"
    assert keys.check_loss_reduction(reduction.SUM_OVER_BATCH_SIZE) == "sum_over_batch_size"
    assert keys.check_loss_reduction(reduction.AUTO) == "auto"
    with pytest.raises(ValueError, match="Invalid loss_reduction: none"):
        keys.check_loss_reduction(reduction.NONE)


@pytest.mark.parametrize("given", [
    LossReduction.NONE, "SUM", "mean", None,
    tf.compat.v1.losses.Reduction.SUM,  # "weighted_sum": the v1 losses' own names
], ids=["none", "upper-case", "unknown", "None", "v1-weighted-sum"])
def test_none_and_unknown_reductions_are_refused_naming_the_three_options(given):
    with pytest.raises(ValueError) as raised:
        keys.check_loss_reduction(given)
    words = str(raised.value)
    assert words.startswith(f"Invalid loss_reduction: {given}. See `tf.losses.Reduction`")
    for option in ("'sum_over_batch_size' (the default)", "'sum'", "'auto'"):
        assert option in words
