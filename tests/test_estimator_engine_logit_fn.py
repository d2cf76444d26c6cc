"""call_logit_fn (tf.estimator.experimental's): the arguments a logit_fn names, and a
result that must be a Tensor or a dict of Tensors by string name."""

import re

import pytest
import tensorflow as tf

import trainexec.estimator as te

pytestmark = pytest.mark.tf_line

call_logit_fn = te.experimental.call_logit_fn
FEATURES = {"f1": tf.constant([[2.0, 3.0]]), "f2": tf.constant([[4.0, 5.0]])}


def test_only_the_arguments_a_logit_fn_names_are_passed():
    seen = []

    def by_mode(features, mode):
        seen.append(mode)
        return features["f1"] if mode == te.ModeKeys.TRAIN else features["f2"]

    def everything(features, mode, params, config):
        seen.append((mode, params, config))
        return {"head1": features["f1"] * params["scale"], "head2": features["f2"]}

    assert call_logit_fn(by_mode, FEATURES, te.ModeKeys.EVAL, "p", "c").numpy().tolist() == [
        [4.0, 5.0]]
    heads = call_logit_fn(everything, FEATURES, te.ModeKeys.TRAIN, {"scale": 2.0}, "c")
    assert heads["head1"].numpy().tolist() == [[4.0, 6.0]]
    assert seen == [te.ModeKeys.EVAL, (te.ModeKeys.TRAIN, {"scale": 2.0}, "c")]


@pytest.mark.parametrize("result, guidance", [
    ([FEATURES["f1"], FEATURES["f2"]], "returned a list"),
    ({"head1": FEATURES["f1"], "head2": "some string"}, r"wrong entries: 'head2': str$"),
    ({1: FEATURES["f1"]}, r"wrong entries: 1: EagerTensor$"),
    (None, "returned a NoneType"),
])
def test_bad_result_rows(result, guidance):
    def logit_fn(features):
        return result

    with pytest.raises(ValueError, match="logit_fn should return a Tensor or a dictionary "
                                         "mapping strings to Tensors") as raised:
        call_logit_fn(logit_fn, FEATURES, te.ModeKeys.PREDICT, None, None)
    assert "Return the logits Tensor" in str(raised.value)
    assert re.search(guidance, str(raised.value)), str(raised.value)
