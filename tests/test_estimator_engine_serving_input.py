"""Serving input receivers and the functions that build them: checked with
tf.estimator's words (then what was given and the fix), placeholders shaped like the
tensors given, supervised receivers for features and labels."""

import re

import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.estimator_engine.serving_input import SupervisedInputReceiver

pytestmark = pytest.mark.tf_line

export, experimental = te.export, te.experimental


class Labeled:
    """Stands for a LabeledTensor: an object TensorFlow converts to its `tensor`."""

    def __init__(self, tensor):
        self.tensor = tensor


tf.register_tensor_conversion_function(
    Labeled, lambda value, dtype=None, name=None, as_ref=False: tf.convert_to_tensor(
        value.tensor, dtype=dtype, name=name))


def receivers():
    return {"examples": tf.constant(["a"])}


ROWS = [
    (lambda: export.ServingInputReceiver(None, receivers()), "features must be defined",
     "ServingInputReceiver `features` is None"),
    (lambda: export.ServingInputReceiver({4.5: tf.constant([1])}, receivers()),
     "feature keys must be strings or ints: 4.5", "type float"),
    (lambda: export.ServingInputReceiver({"f": [1]}, receivers()),
     "feature f must be a Tensor, SparseTensor, or RaggedTensor.", r"`features\['f'\]`"),
    (lambda: export.ServingInputReceiver("text", receivers()),
     "feature feature must be a Tensor", "type str"),
    (lambda: export.ServingInputReceiver({"f": tf.constant([1])}, None),
     "receiver_tensors must be defined", "`receiver_tensors` is None"),
    (lambda: export.ServingInputReceiver({"f": tf.constant([1])}, {1: tf.constant(["a"])}),
     "receiver_tensor keys must be strings: 1", "type int"),
    (lambda: export.ServingInputReceiver({"f": tf.constant([1])}, {"e": [1]}),
     "receiver_tensor e must be a Tensor", r"`receiver_tensors\['e'\]`"),
    (lambda: export.ServingInputReceiver({"f": tf.constant([1])}, receivers(), ["alt"]),
     "receiver_tensors_alternatives must be a dict", "maps a name to receiver tensors"),
    (lambda: export.TensorServingInputReceiver(None, receivers()),
     "features must be defined", "TensorServingInputReceiver"),
    (lambda: export.TensorServingInputReceiver({"f": tf.constant([1])}, receivers()),
     "feature must be a Tensor", "single Tensor, given a dict"),
    (lambda: export.TensorServingInputReceiver(tf.constant([1]), {"e": "x"}),
     "receiver_tensor e must be a Tensor", "TensorServingInputReceiver"),
    (lambda: SupervisedInputReceiver(tf.constant([1]), {2.5: tf.constant([1])}, receivers()),
     "label keys must be strings or ints", "SupervisedInputReceiver `labels`"),
    (lambda: SupervisedInputReceiver(tf.constant([1]), 100, receivers()),
     "label must be a Tensor, SparseTensor, or RaggedTensor.", "type int"),
    (lambda: SupervisedInputReceiver([1], tf.constant([1]), receivers()),
     "feature must be a Tensor, SparseTensor, or RaggedTensor.", "type list"),
    (lambda: experimental.build_raw_supervised_input_receiver_fn(
        {"a": tf.constant([1]), "b": tf.constant([2])}, {"b": tf.constant([3])}),
     "Features and labels must have distinct keys. Found overlapping keys: ..b..",
     "rename"),
    (lambda: experimental.build_raw_supervised_input_receiver_fn(tf.constant([1]), [2]),
     "labels must be a Tensor", "dtype and shape are copied"),
    (lambda: export.build_raw_serving_input_receiver_fn({"x": [1.0]}),
     r"features\['x'\] must be a Tensor", "dtype and shape are copied"),
    (lambda: export.build_parsing_serving_input_receiver_fn({}), "non-empty dict",
     "feature name -> parsing spec"),
]


@pytest.mark.parametrize("build, words, guidance", ROWS)
def test_bad_receiver_rows(build, words, guidance):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=words) as raised:
            build()
    assert re.search(guidance, str(raised.value)), str(raised.value)


def test_single_tensors_are_named_and_a_labeled_tensor_stands_for_its_tensor():
    with tf.Graph().as_default():
        receiver = export.ServingInputReceiver(tf.constant(5), tf.constant(["x"]))
        assert list(receiver.features) == ["feature"]
        assert list(receiver.receiver_tensors) == ["input"]
        labeled = export.ServingInputReceiver(Labeled(tf.constant([1])), tf.constant(["x"]))
        assert isinstance(labeled.features["feature"], tf.Tensor)
        tensor = export.TensorServingInputReceiver(
            tf.sparse.SparseTensor([[0, 0]], [1], [1, 1]), tf.constant(["x"]),
            receiver_tensors_alternatives={"raw": tf.constant([1.0])})
        assert isinstance(tensor.features, tf.sparse.SparseTensor)
        assert list(tensor.receiver_tensors_alternatives["raw"]) == ["input"]
        # int keys are for features only, as in tf.estimator
        assert 42 in export.ServingInputReceiver({42: tf.constant([1])}, receivers()).features


def test_raw_receivers_copy_dtype_and_shape_with_the_batch_first():
    features = {"words": tf.constant([["a", "b"]]), "count": tf.constant([3])}
    with tf.Graph().as_default():
        receiver = export.build_raw_serving_input_receiver_fn(features, 8)()
        assert receiver.receiver_tensors["words"].shape.as_list() == [8, 2]
        assert receiver.receiver_tensors["words"].dtype == tf.string
        assert receiver.features["count"] is receiver.receiver_tensors["count"]
        # A placeholder without a static shape gives one without a static shape.
        unknown = tf.compat.v1.placeholder(tf.float32)
        shapeless = export.build_raw_serving_input_receiver_fn({"u": unknown, "odd key": unknown})()
        assert shapeless.receiver_tensors["u"].shape.rank is None
        assert "odd key" in shapeless.receiver_tensors  # a key that is no op name still works


def test_raw_supervised_receivers_feed_features_and_labels():
    features = {"f1": tf.constant(["hello"]), "f2": tf.constant([42])}
    labels = {"foo": tf.constant([5]), "bar": tf.constant([6])}
    with tf.Graph().as_default():
        both = experimental.build_raw_supervised_input_receiver_fn(features, labels, 10)()
        assert isinstance(both, SupervisedInputReceiver)
        assert set(both.receiver_tensors) == {"f1", "f2", "foo", "bar"}
        assert both.features["f1"].shape.as_list() == [10]
        assert both.labels["foo"].dtype == tf.int32
        single = experimental.build_raw_supervised_input_receiver_fn(
            features["f1"], labels["foo"])()
        assert isinstance(single.features, tf.Tensor) and isinstance(single.labels, tf.Tensor)
        assert set(single.receiver_tensors) == {"input", "label"}
        assert single.receiver_tensors["label"] is single.labels
