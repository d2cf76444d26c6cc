"""Calling a Keras job's `input_fn`: which input functions are given an
`InputContext` (and which one), the check that a `tf.data.Dataset` came back, and the
input options with and without an accelerator; with real tf.data pipelines sharded and
batched by the context they are given."""

import functools
import logging

import numpy as np
import pytest
import tensorflow as tf

from trainexec.keras.fit import input_data

pytestmark = pytest.mark.tf_line


def _elements(dataset):
    return [np.asarray(batch).tolist() for batch in dataset]


def _sharded(context, size=8, global_batch=4):
    """An input_fn's pipeline: its shard of range(size), in per-replica batches."""
    return (tf.data.Dataset.range(size)
            .shard(context.num_input_pipelines, context.input_pipeline_id)
            .batch(context.get_per_replica_batch_size(global_batch)))


class _Method:
    def with_context(self, context):
        return context

    def without(self):
        return None


class _Callable:
    def __call__(self, context):
        return context


class _Unreadable:  # inspect.signature cannot read it: call it without arguments
    __signature__ = "not a signature"

    def __call__(self, *args):
        return args


TAKES = [  # id, callable, whether it is given the context
    ("no-parameters", lambda: None, False),
    ("one-parameter", lambda context: None, True),
    ("var-positional", lambda *args: None, True),
    ("keyword-only", lambda *, context: None, False),
    ("var-keyword", lambda **kwargs: None, False),
    ("bound-method", _Method().with_context, True),
    ("bound-method-only-self", _Method().without, False),
    ("callable-object", _Callable(), True),
    ("partial-all-bound", functools.partial(lambda a: None, 1), False),
    ("partial-one-left", functools.partial(lambda a, context: None, 1), True),
    ("no-signature", _Unreadable(), False),
    # A parameter with a default is left to it, unless it is named as the context.
    ("defaulted-parameter", lambda batch_size=64: None, False),
    ("defaulted-context", lambda input_context=None: None, True),
    ("context-then-defaulted", lambda context, batch_size=64: None, True),
]


@pytest.mark.parametrize("fn,expected", [row[1:] for row in TAKES],
                         ids=[row[0] for row in TAKES])
def test_an_input_fn_takes_the_context_when_it_has_a_positional_parameter(fn, expected):
    assert input_data.takes_argument(fn) is expected


def test_an_input_fn_without_parameters_is_called_without_arguments():
    dataset = tf.data.Dataset.range(3)
    calls = []
    result = input_data.call_input_fn(lambda: calls.append("called") or dataset,
                                      tf.distribute.InputContext(2, 1, 2))
    assert result is dataset and calls == ["called"]
    assert input_data.call_input_fn(_Unreadable()) == ()


def test_an_input_fn_with_a_parameter_gets_one_pipeline_and_one_replica_by_default():
    given = []
    dataset = input_data.call_input_fn(lambda context: given.append(context)
                                       or _sharded(context, size=6))
    (context,) = given
    assert isinstance(context, tf.distribute.InputContext)
    assert (context.num_input_pipelines, context.input_pipeline_id,
            context.num_replicas_in_sync) == (1, 0, 1)
    assert _elements(dataset) == [[0, 1, 2, 3], [4, 5]]  # all of it, global batches


def test_an_input_fn_whose_parameter_has_a_default_is_called_with_that_default(caplog):
    # `def input_fn(batch_size=64)`: the batch size stays 64, not an InputContext.
    def input_fn(batch_size=64):
        return tf.data.Dataset.range(130).batch(batch_size)

    with caplog.at_level(logging.INFO, logger="trainexec.keras.fit.input_data"):
        dataset = input_data.call_input_fn(input_fn, tf.distribute.InputContext(2, 1, 2))
    assert [len(batch) for batch in _elements(dataset)] == [64, 64, 2]
    assert ("input_fn is called without arguments: its parameter 'batch_size' has a "
            "default; to be given the tf.distribute.InputContext, name it 'input_context' "
            "or give it no default") in caplog.text


def test_a_given_context_shards_and_batches_the_input_fns_pipeline():
    # Pipeline 1 of 2 reads 1, 3, 5, 7; a global batch of 4 over 2 replicas is 2 each.
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1,
                                         num_replicas_in_sync=2)
    assert _elements(input_data.call_input_fn(_sharded, context)) == [[1, 3], [5, 7]]


@pytest.mark.parametrize("make", [
    lambda: tf.data.Dataset.range(4),
    lambda: tf.data.Dataset.from_tensor_slices(({"x": np.ones([4, 2])}, np.zeros([4])))
    .batch(2).repeat(),
    lambda: tf.data.Dataset.zip((tf.data.Dataset.range(2), tf.data.Dataset.range(2))),
    lambda: tf.compat.v1.data.Dataset.range(2),
], ids=["range", "batched-repeated", "zipped", "v1-dataset"])
def test_a_dataset_passes_the_check_unchanged(make):
    dataset = make()
    assert input_data.checked_dataset(dataset) is dataset


@pytest.mark.parametrize("value,type_name", [
    (None, "NoneType"),
    ((np.ones([4, 2]), np.zeros([4])), "tuple"),
    ({"x": np.ones([4, 2])}, "dict"),
    (np.ones([4, 2]), "ndarray"),
], ids=["none", "tuple", "dict", "array"])
def test_anything_else_is_refused_naming_the_input_fn_and_what_it_returned(value,
                                                                           type_name):
    with pytest.raises(TypeError) as raised:
        input_data.checked_dataset(value, what="eval_spec.input_fn")
    words = str(raised.value)
    assert words.startswith(f"eval_spec.input_fn returned {type_name}; KerasTrainer needs "
                            "a tf.data.Dataset")
    assert "dataset.repeat()" in words


def test_an_iterator_over_a_dataset_is_not_a_dataset():
    with pytest.raises(TypeError, match="^train_spec.input_fn returned "):
        input_data.checked_dataset(iter(tf.data.Dataset.range(2)))


@pytest.mark.parametrize("devices,fetched", [
    ([], False), (["GPU"], True), (["TPU"], True), (["GPU", "TPU"], True)])
def test_batches_are_fetched_to_a_device_only_when_there_is_an_accelerator(
        monkeypatch, devices, fetched):
    def list_physical_devices(device_type=None):
        return [f"/physical_device:{device_type}:0"] if device_type in devices else []

    monkeypatch.setattr(tf.config, "list_physical_devices", list_physical_devices)
    options = input_data.input_options()
    if fetched:
        assert options is None  # TensorFlow's default: fetch to the accelerator
    else:
        assert isinstance(options, tf.distribute.InputOptions)
        assert options.experimental_fetch_to_device is False


def test_a_strategy_distributes_an_input_fns_batches_with_the_options():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    options = input_data.input_options()
    if options is None:
        pytest.skip("an accelerator is present: the options are TensorFlow's default")
    distributed = strategy.distribute_datasets_from_function(
        lambda context: input_data.checked_dataset(
            input_data.call_input_fn(_sharded, context)), options=options)
    batches = [strategy.experimental_local_results(batch) for batch in distributed]
    assert [[t.numpy().tolist() for t in batch] for batch in batches] == [
        [[0, 1, 2, 3]], [[4, 5, 6, 7]]]
    assert all("CPU" in t.device for batch in batches for t in batch)
