"""What an input_fn may return, and what the model_fn then gets: Python values and NumPy
arrays as they are, datasets through an iterator, a tuple of two as (features, labels);
anything else refused with tf.estimator's words (trainexec/estimator_engine/input_fn.py)."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.estimator_engine import input_fn as inputs

pytestmark = pytest.mark.tf_line


def recording_model_fn(seen):
    def model_fn(features, labels, mode):
        seen.update(features=features, labels=labels, mode=mode)
        step = tf.compat.v1.train.get_global_step()
        return te.EstimatorSpec(mode, loss=tf.constant(0.0), predictions=tf.constant([[1.0]]),
                                train_op=tf.compat.v1.assign_add(step, 1))

    return model_fn


PYTHON_FEATURES = {"x": [[1.0], [2.0]]}
NUMPY_FEATURES = {"x": np.array([[1.0], [2.0]], "float32")}

def tensor(value):
    return isinstance(value, tf.Tensor)


# (case, input_fn, the features the model_fn must get, the labels it must get in training)
SHAPES = [
    ("a dict of lists and a list", lambda: (PYTHON_FEATURES, [1, 2]),
     lambda f: f is PYTHON_FEATURES, lambda l: l == [1, 2]),
    ("a list of two (features, labels)", lambda: [PYTHON_FEATURES, {"y": [1, 2]}],
     lambda f: f is PYTHON_FEATURES, lambda l: l == {"y": [1, 2]}),
    ("NumPy arrays", lambda: (NUMPY_FEATURES, np.array([1, 2])),
     lambda f: f is NUMPY_FEATURES, lambda l: list(l) == [1, 2]),
    ("features alone", lambda: PYTHON_FEATURES, lambda f: f is PYTHON_FEATURES,
     lambda l: l is None),
    ("an empty dict and no labels", lambda: ({}, None), lambda f: f == {}, lambda l: l is None),
    ("a Tensor", lambda: tf.constant([[1.0]]), tensor, lambda l: l is None),
    ("a dataset of (features, labels)",
     lambda: tf.data.Dataset.from_tensors(({"x": [[1.0]]}, [[2.0]])).repeat(),
     lambda f: tensor(f["x"]), tensor),
    ("a dataset of features", lambda: tf.data.Dataset.from_tensors([7.0]).repeat(), tensor,
     lambda l: l is None),
    ("nested features from an iterator",
     lambda: tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensors(
         ((1.0, [2, 3]), [4.0])).repeat()).get_next(),
     lambda f: isinstance(f, tuple) and len(f) == 2 and all(map(tensor, f)), tensor),
]


@pytest.mark.parametrize("input_fn, features_ok, labels_ok", [row[1:] for row in SHAPES],
                         ids=[row[0] for row in SHAPES])
def test_the_model_fn_gets_what_the_input_fn_returned(tmp_path, no_tf_config, input_fn,
                                                       features_ok, labels_ok):
    seen = {}
    estimator = te.Estimator(recording_model_fn(seen), model_dir=str(tmp_path))
    estimator.train(input_fn, steps=1)
    assert features_ok(seen["features"]) and labels_ok(seen["labels"]), seen
    assert estimator.get_variable_value("global_step") == 1
    # Predicting: the same features, and never labels.
    next(estimator.predict(input_fn))
    assert features_ok(seen["features"]) and seen["labels"] is None, seen


@pytest.mark.parametrize("input_fn", [
    lambda: (4, 5, 6),
    lambda: [{"x": [1.0]}],
    lambda: tf.data.Dataset.from_tensors((1.0, 2.0, 3.0)),
], ids=["a tuple of three", "a list of one", "a dataset of triples"])
def test_anything_but_features_or_a_pair_is_refused(tmp_path, no_tf_config, input_fn):
    estimator = te.Estimator(recording_model_fn({}), model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="should return .features, labels. as a len 2 tuple"):
        estimator.train(input_fn, steps=1)


def test_predict_warns_when_the_input_never_ends(tmp_path, no_tf_config, monkeypatch):
    warnings = []
    monkeypatch.setattr(tf.compat.v1.logging, "warning",
                        lambda message, *args: warnings.append(message % args))
    estimator = te.Estimator(recording_model_fn({}), model_dir=str(tmp_path))
    next(estimator.predict(lambda: {"x": tf.constant([[1.0]])}))
    assert any("does not use tf.data.Dataset or contain a QueueRunner" in w
               and "forever" in w for w in warnings)
    warnings.clear()
    next(estimator.predict(lambda: tf.data.Dataset.from_tensors({"x": [[1.0]]})))
    assert warnings == []


def test_a_distribution_gives_its_input_context(no_tf_config):
    class Distribution:  # what tf.distribute's make_input_fn_iterator does with an input_fn
        def make_input_fn_iterator(self, input_fn):
            return input_fn(tf.distribute.InputContext(num_input_pipelines=2,
                                                       input_pipeline_id=1))

    def with_context(input_context, mode):
        return tf.data.Dataset.range(4).shard(input_context.num_input_pipelines,
                                              input_context.input_pipeline_id), mode

    dataset, mode = inputs.iterator_from_input_fn(with_context, te.ModeKeys.TRAIN, {}, None,
                                                  Distribution())[0]
    assert list(dataset.as_numpy_iterator()) == [1, 3] and mode == te.ModeKeys.TRAIN
    without = inputs.iterator_from_input_fn(lambda: tf.data.Dataset.range(2), None, {}, None,
                                            Distribution())[0]
    assert list(without.as_numpy_iterator()) == [0, 1]


def test_reads_dataset_or_queue_tells_an_ending_input():
    with tf.Graph().as_default():
        read = inputs.call_input_fn(lambda: tf.data.Dataset.from_tensors({"x": [1.0]}),
                                    te.ModeKeys.PREDICT, {}, None)
        assert inputs.reads_dataset_or_queue(read.features)
        assert not inputs.reads_dataset_or_queue({"x": tf.constant([1.0])})
        assert not inputs.reads_dataset_or_queue({"x": [1.0]})
