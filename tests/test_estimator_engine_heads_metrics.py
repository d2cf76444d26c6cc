"""The heads' metric objects: the documented arithmetic on every line, Keras 2's numbers
where a Keras 2 is at hand (tf_keras, or tf.keras on TF 2.15), eagerly and in a graph,
and taken by EstimatorSpec as Keras metrics are."""

import importlib

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.estimator_engine.heads import metrics
from trainexec.estimator_engine.heads.auc import AUC

pytestmark = pytest.mark.tf_line

_RNG = np.random.RandomState(0)
LABELS = (_RNG.rand(40, 3) > 0.5).astype(np.float32)
SCORES = _RNG.rand(40, 3).astype(np.float32)
SCORES[0, 0], SCORES[1, 0], SCORES[2, 0] = 0.5, 0.0, 1.0  # on thresholds and edges
WEIGHTS = _RNG.rand(40, 1).astype(np.float32)


def _keras2():
    """A Keras 2 `metrics` module (tf_keras, or Keras 2.15's tf.keras), or None."""
    try:
        return importlib.import_module("tf_keras").metrics
    except ImportError:
        keras = importlib.import_module("keras")
        return tf.keras.metrics if keras.__version__.startswith("2.") else None


ROWS = [  # id, ours, Keras 2's (by name and arguments), what update_state is given
    ("mean", lambda: metrics.Mean("m"), ("Mean", {}), lambda: (SCORES,)),
    ("accuracy", lambda: metrics.Accuracy("m"), ("Accuracy", {}),
     lambda: (LABELS, (SCORES > 0.5).astype(np.float32))),
    ("binary-accuracy", lambda: metrics.BinaryAccuracy("m", 0.3),
     ("BinaryAccuracy", {"threshold": 0.3}), lambda: (LABELS, SCORES)),
    ("precision", lambda: metrics.Precision("m", 0.5), ("Precision", {"thresholds": 0.5}),
     lambda: (LABELS, SCORES)),
    ("recall", lambda: metrics.Recall("m", 0.7), ("Recall", {"thresholds": 0.7}),
     lambda: (LABELS, SCORES)),
    ("auc-roc", lambda: AUC("m"), ("AUC", {}), lambda: (LABELS, SCORES)),
    ("auc-pr", lambda: AUC("m", "PR"), ("AUC", {"curve": "PR"}), lambda: (LABELS, SCORES)),
]


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ours,keras,given", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_keras_2s_numbers(ours, keras, given, weighted):
    module = _keras2()
    if module is None:
        pytest.skip("no Keras 2 here (tf_keras not installed, tf.keras is Keras 3)")
    name, arguments = keras
    theirs, mine = getattr(module, name)(**arguments), ours()
    weights = {"sample_weight": WEIGHTS} if weighted else {}
    for metric in (theirs, mine):
        for half in (slice(0, 20), slice(20, 40)):  # two batches
            metric.update_state(*[value[half] for value in given()],
                                **{k: v[half] for k, v in weights.items()})
    assert float(mine.result()) == pytest.approx(float(theirs.result()), abs=1e-6)


def test_documented_arithmetic():
    mean = metrics.Mean("m")
    mean.update_state([[1.0], [3.0]], sample_weight=[[1.0], [3.0]])
    assert float(mean.result()) == pytest.approx(10.0 / 4.0)
    label_mean = metrics.Mean("labels")
    label_mean.update_state([1.0, 1.0, 0.0, 1.0])
    baseline = metrics.AccuracyBaseline("baseline", label_mean)
    assert float(baseline.result()) == pytest.approx(0.75)
    perfect = AUC("auc")
    perfect.update_state([0.0, 0.0, 1.0, 1.0], [0.1, 0.2, 0.8, 0.9])
    assert float(perfect.result()) == pytest.approx(1.0)
    precision = metrics.Precision("p")
    precision.update_state([1.0, 0.0, 1.0], [0.9, 0.8, 0.1])
    assert float(precision.result()) == pytest.approx(0.5)


def test_in_a_graph_they_are_local_metric_variables_and_estimator_spec_takes_them():
    with tf.Graph().as_default():
        mean = metrics.Mean("average")
        mean.update_state(tf.constant([2.0, 4.0]))
        keys = tf.compat.v1.GraphKeys
        assert set(mean.variables) <= set(tf.compat.v1.get_collection(keys.METRIC_VARIABLES))
        assert not tf.compat.v1.global_variables()
        spec = te.EstimatorSpec(te.ModeKeys.EVAL, loss=tf.constant(1.0),
                                eval_metric_ops={"average": mean})
        value, update = spec.eval_metric_ops["average"]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.local_variables_initializer())
            session.run(update)
            session.run(update)
            assert session.run(value) == pytest.approx(3.0)


def test_reset_state_starts_again():
    mean = metrics.Mean("m")
    mean.update_state([5.0])
    mean.reset_state()
    mean.update_state([1.0])
    assert float(mean.result()) == 1.0


def test_an_unknown_auc_curve_is_refused():
    with pytest.raises(ValueError, match='AUC curve must be "ROC" or "PR"'):
        AUC("m", curve="roc")
