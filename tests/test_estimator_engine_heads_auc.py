"""`AUC`: the 200 thresholds, the per-threshold counts a batch adds, and the ROC and
precision-recall areas of examples small enough to work out by hand, eagerly and
streamed over batches in a tf.compat.v1 graph (as an Estimator's evaluation runs it).
Keras 2's numbers for a random batch are compared in the metrics' tests."""

import math

import numpy as np
import pytest
import tensorflow as tf

from trainexec.estimator_engine.heads.auc import AUC, NUM_THRESHOLDS, thresholds

pytestmark = pytest.mark.tf_line

# Two negatives (0.1, 0.4), two positives (0.35, 0.8): of the 4 (positive, negative)
# pairs, 3 rank the positive higher (0.35 < 0.4 is the one that does not): ROC AUC 3/4.
LABELS = [0.0, 0.0, 1.0, 1.0]
SCORES = [0.1, 0.4, 0.35, 0.8]


def _area(labels, scores, curve="ROC", weights=None):
    metric = AUC("auc", curve)
    metric.update_state(labels, scores, sample_weight=weights)
    return float(metric.result())


def test_the_thresholds_are_k_over_199_between_a_hair_below_0_and_above_1():
    points = thresholds()
    assert len(points) == NUM_THRESHOLDS == 200
    assert -1e-6 < points[0] < 0.0 and 1.0 < points[-1] < 1.0 + 1e-6
    assert points[1:-1] == pytest.approx([k / 199 for k in range(1, 199)], abs=1e-12)
    assert thresholds(5)[1:-1] == pytest.approx([0.25, 0.5, 0.75])


def test_each_thresholds_counts_are_the_weighted_predictions_above_it():
    rng = np.random.RandomState(3)
    labels = (rng.rand(64) > 0.4).astype(np.float32)
    scores = rng.rand(64).astype(np.float32)
    weights = rng.rand(64).astype(np.float32)
    metric = AUC("auc")
    metric.update_state(labels, scores, sample_weight=weights)
    # The definition, from the module doc: k/199 inner thresholds, a hair outside [0, 1].
    edges = np.array([-1e-7] + [k / 199 for k in range(1, 199)] + [1 + 1e-7])
    above = scores[:, None] > edges[None, :]  # [example, threshold]
    positive, negative = weights * labels, weights * (1 - labels)
    expected = {"true_positives": positive @ above, "false_positives": negative @ above,
                "false_negatives": positive @ ~above, "true_negatives": negative @ ~above}
    for name, counts in expected.items():
        np.testing.assert_allclose(getattr(metric, name).numpy(), counts, atol=1e-4,
                                   err_msg=name)


def test_roc_area_of_a_hand_checked_example():
    assert _area(LABELS, SCORES) == pytest.approx(0.75, abs=1e-6)
    assert _area([0.0, 1.0], [0.9, 0.2]) == pytest.approx(0.0, abs=1e-6)  # all misranked


def test_a_tie_between_a_positive_and_a_negative_counts_half():
    # Same score: one step of the curve goes diagonally, from (0, 0) to (1, 1).
    assert _area([0.0, 1.0], [0.5, 0.5]) == pytest.approx(0.5, abs=1e-6)
    # Beside a correctly ranked pair: (1 + 0.5) / 2 pairs.
    assert _area([0.0, 0.0, 1.0], [0.2, 0.6, 0.6]) == pytest.approx(0.75, abs=1e-6)


def test_weights_count_each_pair_by_the_product_of_its_weights():
    # Negatives weigh 1 (0.1) and 3 (0.4), positives 1 each: 8 in all; the pairs ranked
    # right are 0.35 > 0.1 (1), 0.8 > 0.1 (1) and 0.8 > 0.4 (3): 5 / 8.
    weighted = _area(LABELS, SCORES, weights=[1.0, 3.0, 1.0, 1.0])
    assert weighted == pytest.approx(0.625, abs=1e-6)
    # A weight of 0 drops an example: without the misranked 0.4, every pair is right.
    dropped = _area(LABELS, SCORES, weights=[1.0, 0.0, 1.0, 1.0])
    assert dropped == pytest.approx(1.0, abs=1e-6)


def test_predictions_outside_0_and_1_are_clipped_to_the_ends():
    assert _area([0.0, 1.0], [-3.0, 7.0]) == pytest.approx(1.0, abs=1e-6)
    assert _area([0.0, 1.0], [7.0, 1.0]) == pytest.approx(0.5, abs=1e-6)  # both at 1


def test_precision_recall_area_interpolates_precision_between_thresholds():
    # Scores 0.9 (+), 0.6 (-), 0.3 (+). Lowering the threshold past 0.9 takes recall
    # 0 -> 1/2 at precision 1: area 1/2. Past 0.3, one more true positive: along the
    # step tp goes 1 -> 2 with one false positive, precision tp / (tp + 1), recall
    # tp / 2: the integral of tp / (tp + 1) d(tp / 2) from 1 to 2 is
    # (1 - ln 3 + ln 2) / 2. Total 1 - ln(1.5) / 2 = 0.79727 (trapezoids would give
    # 0.79167).
    expected = 1.0 - math.log(1.5) / 2.0
    area = _area([1.0, 0.0, 1.0], [0.9, 0.6, 0.3], "PR")
    assert area == pytest.approx(expected, abs=1e-5)
    assert _area([1.0, 0.0], [0.9, 0.1], "PR") == pytest.approx(1.0, abs=1e-6)


def test_in_a_graph_the_area_streams_over_batches_in_local_metric_variables():
    with tf.Graph().as_default():
        labels = tf.compat.v1.placeholder(tf.float32, [None, 1])
        scores = tf.compat.v1.placeholder(tf.float32, [None, 1])
        metric = AUC("auc")
        update = metric.update_state(labels, scores)
        value = metric.result()
        assert metric.updates == [update]
        keys = tf.compat.v1.GraphKeys
        local = tf.compat.v1.get_collection(keys.LOCAL_VARIABLES)
        assert set(metric.variables) == set(local) and len(local) == 4
        assert not tf.compat.v1.global_variables()  # no checkpoint holds them
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.local_variables_initializer())
            # LABELS / SCORES in two batches: the negatives, then the positives.
            session.run(update, {labels: [[0.0], [0.0]], scores: [[0.1], [0.4]]})
            session.run(update, {labels: [[1.0], [1.0]], scores: [[0.35], [0.8]]})
            assert session.run(value) == pytest.approx(0.75, abs=1e-6)
            session.run(metric.reset_state())
            session.run(update, {labels: [[1.0], [0.0]], scores: [[0.7], [0.2]]})
            assert session.run(value) == pytest.approx(1.0, abs=1e-6)
