"""Export outputs are checked with tf.estimator's words (then what was given and the
fix), and name their outputs as tf.estimator did."""

import re

import pytest
import tensorflow as tf

import trainexec.estimator as te

pytestmark = pytest.mark.tf_line

export = te.export

ROWS = [
    (lambda: export.PredictOutput({1: tf.zeros([1])}),
     "Prediction output key must be a string; got 1", "keyed by strings"),
    (lambda: export.PredictOutput({"p": [1.0]}),
     "Prediction output value must be a Tensor; got", "for 'p'"),
    (lambda: export.PredictOutput("text"), "Prediction output value must be a Tensor",
     "type str"),
    (lambda: export.ClassificationOutput(),
     "Cannot create a ClassificationOutput with empty arguments. At least one of `scores` "
     "and `classes` must be defined", "needs `scores`, `classes` or both"),
    (lambda: export.ClassificationOutput(scores=tf.zeros([1, 2], tf.int32)),
     "Classification scores must be a float32 Tensor", r"tf\.cast"),
    (lambda: export.ClassificationOutput(classes=tf.zeros([1])),
     "Classification classes must be a string Tensor", r"tf\.strings\.as_string"),
    (lambda: export.RegressionOutput(tf.zeros([1], tf.int32)),
     "Regression output value must be a float32 Tensor", "one float prediction"),
    (lambda: export.RegressionOutput(None), "Regression output value must be a float32",
     "got None"),
]


@pytest.mark.parametrize("build, words, guidance", ROWS)
def test_bad_output_rows(build, words, guidance):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=re.escape(words) if "\\" not in words
                           else words) as raised:
            build()
    assert re.search(guidance, str(raised.value)), str(raised.value)


def test_outputs_are_named_as_in_tf_estimator():
    with tf.Graph().as_default():
        scores = tf.constant([[0.1, 0.9]])
        assert list(export.PredictOutput(scores).outputs) == ["output"]
        heads = export.PredictOutput({("head", "probabilities"): scores})
        assert list(heads.outputs) == ["head/probabilities"]  # multi-head tuple keys
        classified = export.ClassificationOutput(scores=scores,
                                                 classes=tf.constant([["a", "b"]]))
        assert classified.scores is scores and classified.classes.dtype == tf.string
        assert isinstance(classified, export.ExportOutput)
