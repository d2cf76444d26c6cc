"""trainexec/estimator_engine/inputs/feeding.py: the batches tf.estimator's queues gave
(epochs running into each other, a short last batch, then OutOfRangeError), shuffling
that follows the graph's seed, the arrays kept out of the graph, the dataset behind an
input_fn's tensors, and the arguments refused with what to fix."""

import logging

import numpy as np
import pytest
import tensorflow as tf

from trainexec.estimator_engine.inputs.feeding import (batches, check_feeding,
                                                       dataset_behind, tensor_dtype,
                                                       tensors_from)

pytestmark = pytest.mark.tf_line

FEED = dict(batch_size=2, num_epochs=1, shuffle=False, queue_capacity=1000, num_threads=1)


def read(columns, seed=None, limit=1000, **options):
    """Every batch of the column "a" a plain session reads, up to OutOfRangeError."""
    with tf.Graph().as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        element = tensors_from(batches(columns, **{**FEED, **options}))
        got = []
        with tf.compat.v1.Session() as session:
            try:
                while len(got) < limit:
                    got.append(session.run(element)["a"].tolist())
            except tf.errors.OutOfRangeError:
                pass
    return got


@pytest.mark.parametrize("options, expected", [
    (dict(num_epochs=3), [[0, 1], [2, 0], [1, 2], [0, 1], [2]]),
    (dict(batch_size=128, num_epochs=2), [[0, 1, 2, 0, 1, 2]]),
    (dict(batch_size=3, num_epochs=1), [[0, 1, 2]]),
    (dict(num_epochs=0), []),
    (dict(num_epochs=1, num_threads=2), [[0, 1], [2, 0], [1, 2]]),
], ids=["epochs-run-into-each-other", "one-batch-for-all", "exact", "no-epochs",
        "each-thread-reads-its-epochs"])
def test_rows_in_order_then_the_end(options, expected):
    assert read({"a": np.arange(3)}, **options) == expected


def test_without_num_epochs_batches_are_full_and_never_end():
    got = read({"a": np.arange(3)}, num_epochs=None, limit=4)
    assert got == [[0, 1], [2, 0], [1, 2], [0, 1]]
    with tf.Graph().as_default():
        endless = tensors_from(batches({"a": np.zeros((3, 5))},
                                       **{**FEED, "num_epochs": None}))
        ending = tensors_from(batches({"a": np.zeros((3, 5))}, **FEED))
    assert endless["a"].shape.as_list() == [2, 5]  # a static batch, as dequeue_many's
    assert ending["a"].shape.as_list() == [None, 5]  # as dequeue_up_to's


def test_shuffling_reads_every_row_once_per_epoch_in_the_seeds_order():
    rows = np.arange(50)
    first = read({"a": rows}, seed=7, shuffle=True, batch_size=10, num_epochs=2)
    again = read({"a": rows}, seed=7, shuffle=True, batch_size=10, num_epochs=2)
    other = read({"a": rows}, seed=8, shuffle=True, batch_size=10, num_epochs=2)
    flat = sum(first, [])
    assert sorted(flat) == sorted(list(rows) * 2)
    assert flat != sorted(flat) and first == again and first != other


def test_a_small_capacity_shuffles_within_a_window():
    flat = sum(read({"a": np.arange(100)}, seed=1, shuffle=True, batch_size=10,
                    queue_capacity=5), [])
    assert sorted(flat) == list(range(100))
    # The window holds 5 rows: the p-th row read is one of the first p + 5.
    assert all(row < position + 5 for position, row in enumerate(flat))
    assert flat != list(range(100))


def test_text_columns_and_shapes_of_examples():
    columns = {"a": np.arange(2), "text": np.array(["sedan", "wagon"]),
               "objects": np.array(["x", "yz"], dtype=object), "grid": np.ones((2, 3, 4))}
    with tf.Graph().as_default():
        element = tensors_from(batches(columns, **FEED))
        with tf.compat.v1.Session() as session:
            got = session.run(element)
    assert got["text"].tolist() == [b"sedan", b"wagon"]
    assert got["objects"].tolist() == [b"x", b"yz"]
    assert got["grid"].shape == (2, 3, 4)


def test_the_arrays_stay_out_of_the_graph():
    """A checkpoint's meta graph holds the graph: 8 MB of data must not land in it."""
    with tf.Graph().as_default() as graph:
        tensors_from(batches({"a": np.zeros((1000, 1000))}, **FEED))
    assert graph.as_graph_def().ByteSize() < 100_000


def test_more_threads_warn_that_they_read_more_epochs(caplog):
    with caplog.at_level(logging.WARNING), tf.Graph().as_default():
        batches({"a": np.arange(3)}, **{**FEED, "num_threads": 3})
    assert "the input gives 3 epochs" in caplog.text
    assert "every reader reads the rows in order" in caplog.text


def test_the_dataset_behind_tensors_as_they_were_returned():
    with tf.Graph().as_default():
        dataset = batches({"a": np.arange(3), "b": np.arange(3)}, **FEED)
        pair = dataset.map(lambda c: ({"a": c["a"]}, c["b"]))
        features, labels = tensors_from(pair)
        assert dataset_behind((features, labels)) is pair
        assert dataset_behind([features, labels]) is pair  # a list, as an input_fn may
        assert dataset_behind(features) is None  # not what was made
        assert dataset_behind(({"a": features["a"] + 1}, labels)) is None
    with tf.Graph().as_default():
        features, labels = tensors_from(batches({"a": np.arange(3)}, **FEED).map(
            lambda c: (c["a"], c["a"])))
        tf.compat.v1.summary.scalar("first", features[0])  # an op reads them already
        assert dataset_behind((features, labels)) is None
    with tf.Graph().as_default():  # another graph knows nothing of them
        assert dataset_behind((features, labels)) is None


SHUFFLE_WORDS = "shuffle must be provided and explicitly set as boolean"


@pytest.mark.parametrize("changes, words", [
    (dict(shuffle=None), [SHUFFLE_WORDS, "got None", "shuffle=True", "for training"]),
    (dict(shuffle=1), [SHUFFLE_WORDS, "got 1"]),
    (dict(batch_size=0), ["numpy_input_fn", "batch_size must be an integer > 0, got 0"]),
    (dict(batch_size=2.5), ["batch_size must be an integer > 0, got 2.5"]),
    (dict(batch_size=True), ["batch_size must be an integer > 0, got True"]),
    (dict(num_epochs=-1), ["num_epochs must be an integer >= 0, or None", "got -1"]),
    (dict(num_epochs=1.5), ["num_epochs", "got 1.5"]),
    (dict(queue_capacity=0), ["queue_capacity must be an integer > 0, got 0"]),
    (dict(queue_capacity=None), ["queue_capacity must be an integer > 0, got None"]),
    (dict(num_threads=0), ["num_threads must be an integer > 0", "got 0"]),
], ids=lambda value: str(value)[:40])
def test_arguments_are_refused_with_what_to_fix(changes, words):
    with pytest.raises(ValueError) as raised:
        check_feeding("numpy_input_fn", **{**FEED, **changes})
    assert all(word in str(raised.value) for word in words), str(raised.value)


def test_valid_arguments_pass():
    check_feeding("numpy_input_fn", **{**FEED, "num_epochs": None, "batch_size": np.int64(3)})
    check_feeding("pandas_input_fn", **{**FEED, "queue_capacity": None},
                  capacity_may_be_none=True)


def test_a_dtype_tensorflow_cannot_hold_names_the_column():
    with pytest.raises(TypeError, match=r"column 'when' has dtype datetime64\[ns\].*"
                                        r"convert it first"):
        tensor_dtype(np.array(["2024-01-01"], dtype="datetime64[ns]"), "column 'when'")
