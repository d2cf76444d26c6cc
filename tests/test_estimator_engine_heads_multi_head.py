"""MultiHead: beside tf.estimator's (TF 2.15, 1e-6: logits as a dict or one Tensor,
head weights, the merged signatures), and on every line its refusals."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from head_parity import assert_same, run_spec

pytestmark = pytest.mark.tf_line

_RNG = np.random.RandomState(13)


def _two_heads(api, weights=None):
    return api.MultiHead([api.MultiClassHead(3, name="kind", weight_column="w"),
                          api.BinaryClassHead(name="spam", thresholds=[0.4])],
                         head_weights=weights)


def _batches(as_dict, with_labels=True):
    made = []
    for _ in range(3):
        features = {"w": _RNG.rand(8, 1).astype(np.float32)}
        kind = _RNG.normal(size=(8, 3)).astype(np.float32)
        spam = _RNG.normal(size=(8, 1)).astype(np.float32)
        logits = ({"kind": kind, "spam": spam} if as_dict
                  else np.concatenate([kind, spam], axis=-1))
        labels = {"kind": _RNG.randint(0, 3, size=(8, 1)).astype(np.int64),
                  "spam": (_RNG.rand(8, 1) > 0.5).astype(np.float32)}
        made.append((features, logits, labels if with_labels else None))
    return made


@pytest.mark.estimator
@pytest.mark.parametrize("as_dict", [True, False], ids=["logits-dict", "logits-tensor"])
@pytest.mark.parametrize("weights", [None, (1.0, 2.5)], ids=["even", "head-weights"])
@pytest.mark.parametrize("mode", ["eval", "train", "infer"])
def test_the_same_numbers_as_tf_estimator(as_dict, weights, mode):
    batches = _batches(as_dict, with_labels=mode != "infer")
    kwargs = {"regularization_losses": [0.5]} if mode == "eval" else {}

    def make_head(api):
        return _two_heads(api, weights)

    assert_same(run_spec(make_head, tf.estimator, mode, batches, **kwargs),
                run_spec(make_head, te, mode, batches, **kwargs))


def test_predict_serves_the_first_head_by_default_and_every_head_by_name():
    with tf.Graph().as_default():
        spec = _two_heads(te).create_estimator_spec(
            features={}, mode=te.ModeKeys.PREDICT,
            logits={"kind": tf.zeros([2, 3]), "spam": tf.zeros([2, 1])})
    assert sorted(spec.export_outputs) == [
        "kind", "kind/classification", "kind/predict", "predict", "serving_default", "spam",
        "spam/classification", "spam/predict", "spam/regression"]
    assert spec.export_outputs["serving_default"] is spec.export_outputs["kind"]
    assert ("spam", "logistic") in spec.predictions


@pytest.mark.parametrize("heads,weights,words", [
    ([], None, r"Must specify heads\. Given: \[\]"),
    ([("a", 2)], (1.0, 2.0), r"heads and head_weights must have the same size"),
    ([(None, 2)], None, r"All given heads must have name specified"),
])
def test_bad_heads_are_refused_in_tf_estimators_words(heads, weights, words):
    made = [te.BinaryClassHead(name=name) for name, _ in heads]
    with pytest.raises(ValueError, match=words):
        te.MultiHead(made, head_weights=weights)


def test_logits_that_do_not_split_and_missing_labels_are_named():
    head = _two_heads(te)
    with pytest.raises(ValueError, match=r"Could not split logits of shape \[2, 3\].*"
                       "should equal 4 but is 3"):
        head.loss({"kind": [[0]], "spam": [[1.0]]}, np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"labels has missing values for head\(s\): "
                       r"\['spam'\]"):
        head.loss({"kind": [[0]]}, np.zeros((1, 4), np.float32))
