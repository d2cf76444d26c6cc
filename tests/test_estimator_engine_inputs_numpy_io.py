"""trainexec/estimator_engine/inputs/numpy_io.py: `numpy_input_fn` gives what
tf.estimator's did (the contracts of tf.estimator's numpy_io_test, in our words): the
batches of a dict of arrays or of one array, labels as an array or a dict, the end of
the input where tf.estimator's came, read by a plain session or a MonitoredSession,
and the errors tf.estimator raised, in its words, each followed by what to do."""

import numpy as np
import pytest
import tensorflow as tf

from input_readers import columns, read_all
from trainexec.estimator_engine.inputs.numpy_io import numpy_input_fn

pytestmark = pytest.mark.tf_line

IN_ORDER = dict(batch_size=2, shuffle=False, num_epochs=1)


def test_a_dict_of_arrays_and_labels_in_batches_then_the_end():
    x = {"a": np.arange(4) * 1.0, "b": np.arange(32, 36)}
    got = read_all(numpy_input_fn(x, np.arange(-32, -28), **IN_ORDER))
    assert [columns(batch) for batch in got] == [
        ({"a": [0.0, 1.0], "b": [32, 33]}, [-32, -31]),
        ({"a": [2.0, 3.0], "b": [34, 35]}, [-30, -29])]


@pytest.mark.parametrize("rows, options, expected_a", [
    (5, dict(batch_size=2), [[0, 1], [2, 3], [4]]),
    (3, dict(batch_size=2, num_epochs=3), [[0, 1], [2, 0], [1, 2], [0, 1], [2]]),
    (4, dict(batch_size=10), [[0, 1, 2, 3]]),
    (2, dict(batch_size=128, num_epochs=2), [[0, 1, 0, 1]]),
    (4, dict(num_epochs=0), []),
], ids=["last-batch-short", "epochs-across-batches", "batch-larger-than-data",
        "large-batch-two-epochs", "zero-epochs"])
def test_batches_and_epochs(rows, options, expected_a):
    x = {"a": np.arange(rows) * 1.0, "b": np.arange(32, 32 + rows)}
    y = np.arange(-32, -32 + rows)
    got = read_all(numpy_input_fn(x, y, **{**IN_ORDER, **options}))
    assert [batch[0]["a"].tolist() for batch in got] == expected_a
    assert [batch[1].tolist() for batch in got] == [[v - 32 for v in a] for a in expected_a]
    assert [batch[0]["b"].tolist() for batch in got] == [[v + 32 for v in a]
                                                         for a in expected_a]


def test_features_of_different_shapes():
    x = {"a": np.array([[1, 2], [3, 4]]), "b": np.array([5, 6])}
    (got,) = read_all(numpy_input_fn(x, np.arange(-32, -30), **IN_ORDER))
    assert columns(got) == ({"a": [[1, 2], [3, 4]], "b": [5, 6]}, [-32, -31])


def test_without_y_the_features_alone():
    x = {"a": np.arange(4) * 1.0, "b": np.arange(32, 36)}
    got = read_all(numpy_input_fn(x, None, **IN_ORDER))
    assert [columns(batch) for batch in got] == [{"a": [0.0, 1.0], "b": [32, 33]},
                                                 {"a": [2.0, 3.0], "b": [34, 35]}]


def test_y_as_a_dict_gives_a_dict_of_labels():
    x = {"a": np.arange(4) * 1.0, "b": np.arange(32, 36)}
    y = {"y1": np.arange(-32, -28), "y2": np.arange(32, 28, -1)}
    got = read_all(numpy_input_fn(x, y, **IN_ORDER))
    assert len(got) == 2
    assert columns(got[0]) == ({"a": [0.0, 1.0], "b": [32, 33]},
                               {"y1": [-32, -31], "y2": [32, 31]})


@pytest.mark.parametrize("x, y, expected", [
    (np.arange(4) * 1.0, np.arange(-32, -28), [([0.0, 1.0], [-32, -31]),
                                               ([2.0, 3.0], [-30, -29])]),
    (np.arange(4) * 1.0, {"y1": np.arange(-32, -28)}, [([0.0, 1.0], {"y1": [-32, -31]}),
                                                      ([2.0, 3.0], {"y1": [-30, -29]})]),
    (np.arange(16).reshape(4, 2, 2) * 1.0, np.arange(-48, -32).reshape(4, 2, 2),
     [([[[0, 1], [2, 3]], [[4, 5], [6, 7]]], [[[-48, -47], [-46, -45]],
                                              [[-44, -43], [-42, -41]]]),
      ([[[8, 9], [10, 11]], [[12, 13], [14, 15]]], [[[-40, -39], [-38, -37]],
                                                    [[-36, -35], [-34, -33]]])]),
], ids=["array", "array-and-dict-of-labels", "n-dimensional"])
def test_one_array_is_one_features_tensor_in_a_monitored_session(x, y, expected):
    got = read_all(numpy_input_fn(x, y, **IN_ORDER), monitored=True)
    assert [columns(batch) for batch in got] == expected


def test_an_array_and_a_dict_of_it_give_the_same_batches():
    x = np.vstack((np.arange(4) * 1.0, np.arange(32, 36)))
    y = np.arange(-48, -40).reshape(2, 4)
    from_array = read_all(numpy_input_fn(x, y, **IN_ORDER))
    from_dict = read_all(numpy_input_fn({"feature1": x}, y, **IN_ORDER))
    assert len(from_array) == len(from_dict) == 1
    np.testing.assert_array_equal(from_array[0][0], from_dict[0][0]["feature1"])
    np.testing.assert_array_equal(from_array[0][1], from_dict[0][1])


def test_x_and_y_are_not_changed():
    array = np.arange(32, 36)
    x = {"__target_key__": array}
    got = read_all(numpy_input_fn(x, np.arange(4), **IN_ORDER))
    assert list(x) == ["__target_key__"] and x["__target_key__"] is array
    assert columns(got[0]) == ({"__target_key__": [32, 33]}, [0, 1])


def test_text_features_feed_a_feature_column():
    x = {"price": np.array([11., 12., 13., 14.]),
         "body-style": np.array(["sedan", "hardtop", "wagon", "sedan"])}
    style = tf.feature_column.categorical_column_with_vocabulary_list(
        "body-style", vocabulary_list=["hardtop", "wagon", "sedan"])
    with tf.Graph().as_default():
        features = numpy_input_fn(x, batch_size=2, shuffle=False)()
        net = tf.compat.v1.feature_column.input_layer(
            features, [tf.feature_column.numeric_column("price"),
                       tf.feature_column.indicator_column(style)])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            first = session.run(net).tolist()
    assert first == [[0.0, 0.0, 1.0, 11.0], [1.0, 0.0, 0.0, 12.0]]


A = np.arange(4) * 1.0
B = np.arange(32, 36)


@pytest.mark.parametrize("args, error, words", [
    (dict(x=list(range(32, 36)), y=np.arange(4)), TypeError,
     ["x must be a dict or array; got list", "np.asarray"]),
    (dict(x={}, y=np.arange(4)), ValueError, ["x cannot be an empty dict"]),
    (dict(x=np.array([[], []]), y=np.arange(4)), ValueError,
     ["x cannot be an empty array", "one row per example"]),
    (dict(x={"a": A, "b": B}, y=np.arange(10)), ValueError,
     ["Length of tensors in x and y is mismatched", "Shapes in x:", "(10,)",
      "the same first dimension"]),
    (dict(x={"a": np.arange(1), "b": B}, y=None), ValueError,
     ["Length of tensors in x and y is mismatched", "Shapes in y: None"]),
    (dict(x={"a": A, "b": B}, y={}), ValueError,
     ["y cannot be empty dict, use None instead"]),
    (dict(x={"a": A, "b": B}, y={"y1": A, "a": A, "y2": A, "b": B}), ValueError,
     ["2 duplicate keys are found in both x and y", "['a', 'b']", "rename them"]),
    (dict(x={"a": [1, 2]}, y=None), TypeError,
     ["x['a'] must be a numpy array", "got list", "np.asarray"]),
    (dict(x=A, y=[1, 2, 3, 4]), TypeError, ["y must be a numpy array", "got list"]),
    (dict(x={"when": np.array(["2024-01-01"], dtype="datetime64[ns]")}, y=None),
     TypeError, ["'when' has dtype datetime64[ns]", "convert it first"]),
    (dict(x=A, y=None, shuffle=None), ValueError,
     ["shuffle must be provided and explicitly set as boolean", "got None",
      "numpy_input_fn(..., shuffle=True)"]),
    (dict(x=A, y=None, num_threads=0), ValueError,
     ["numpy_input_fn: num_threads must be an integer > 0"]),
], ids=["x-a-list", "x-empty-dict", "x-empty-array", "y-longer", "x-lengths-differ",
        "y-empty-dict", "keys-in-both", "x-value-a-list", "y-a-list", "x-of-dates",
        "shuffle-not-given", "no-threads"])
def test_bad_inputs_are_refused_in_tensorflows_words_then_ours(args, error, words):
    kwargs = {"batch_size": 2, "shuffle": False, "num_epochs": 1, **args}
    with pytest.raises(error) as raised:
        numpy_input_fn(**kwargs)()
    assert all(word in str(raised.value) for word in words), str(raised.value)


def test_shuffle_has_no_default():
    with pytest.raises(ValueError, match="shuffle must be provided"):
        numpy_input_fn(np.arange(32, 36), np.arange(4))  # before any input_fn is called
