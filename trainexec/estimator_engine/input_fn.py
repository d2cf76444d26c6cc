"""Calling an `input_fn` and reading what it returns, as tf.estimator read it.

An `input_fn` is given the `mode`, `params` and `config` it names (and an
`input_context` where a caller has one: a distribution's `make_input_fn_iterator`), and
returns one of:

* a `tf.data.Dataset` of features, or of `(features, labels)`: read through an iterator
  that a hook initializes in every session created (a MonitoredSession recreates its
  session after a ps failure);
* `(features, labels)`, a tuple or list of two;
* features alone (`labels` is None then).

Under a distribution strategy (`strategy_iterator`), the strategy's iterator reads the
dataset, which runs without tf.data's autotuning unless its options set
`autotune.enabled`, nor do the per-device datasets of the iterator
(`compat.device_input`): destroying an autotuned iterator at a session's close waited
for its tuning thread, which is not woken then (its period grows to 60 s), and a
MultiWorkerMirroredStrategy chief returned from training up to 42 s late so.

Features and labels reach the `model_fn` as they come: Tensors, dicts of Tensors,
nested tuples, and also Python values or NumPy arrays (`{"x": [[1.], [2.]]}`), which
the `model_fn`'s own ops convert, as they did under tf.estimator. A tuple or list of
any other length is a ValueError.

Example:
    ```python
    inputs = call_input_fn(input_fn, ModeKeys.TRAIN, params, config)
    inputs.features, inputs.labels, inputs.hooks   # hooks: the dataset's initializer
    ```
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, NamedTuple

import tensorflow as tf

from trainexec.estimator_engine.calls import fn_args
from trainexec.estimator_engine.compat.device_input import (autotune_off,
                                                            device_datasets_without_autotune)

__all__ = ["Inputs", "as_dataset", "call_input_fn", "invoke_input_fn",
           "iterator_from_input_fn", "iterator_initializer_hook", "reads_dataset_or_queue",
           "split_features_and_labels", "strategy_iterator", "without_autotune_unless_asked"]


class Inputs(NamedTuple):
    """What an input_fn gave: `features`, `labels` (or None), the hooks that
    (re)initialize a dataset's iterator in each new session, and the op that points
    that iterator at an empty dataset (None without a dataset)."""

    features: Any
    labels: Any
    hooks: tuple
    release: Any = None


class _IteratorInitializerHook(tf.compat.v1.train.SessionRunHook):
    """Runs a dataset iterator's initializer in every session created."""

    def __init__(self, initializer: Any) -> None:
        self._initializer = initializer

    def after_create_session(self, session: Any, coord: Any) -> None:
        del coord
        session.run(self._initializer)


def iterator_initializer_hook(initializer: Any) -> Any:
    """A SessionRunHook running `initializer` (a dataset iterator's) in every session."""
    return _IteratorInitializerHook(initializer)


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def split_features_and_labels(element: Any, where: str) -> tuple[Any, Any]:
    """`(features, labels)` of an input_fn's result or a dataset's element."""
    if isinstance(element, (tuple, list)):
        if len(element) != 2:
            raise ValueError(
                f"input_fn should return (features, labels) as a len 2 tuple; {where} "
                f"gives a {type(element).__name__} of {len(element)} items. Return "
                "features alone, or (features, labels) with the features (or labels) "
                "gathered in a dict or tuple of their own")
        return element[0], element[1]
    return element, None


def as_dataset(result: Any) -> Any:
    """The dataset behind `trainexec.estimator.inputs`' tensors (numpy_input_fn's,
    pandas_input_fn's), read through a rewindable iterator as a dataset is; else
    `result` as it is."""
    from trainexec.estimator_engine.inputs.feeding import dataset_behind

    behind = dataset_behind(result)
    return result if behind is None else behind


def invoke_input_fn(input_fn: Callable, mode: str | None, params: Any, config: Any,
                    input_context: Any = None) -> Any:
    """What `input_fn` returns, called with the arguments it names (module doc)."""
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn!r}")
    args = fn_args(input_fn)
    offered = {"mode": mode, "params": params, "config": config}
    if input_context is not None:
        offered["input_context"] = input_context
    return input_fn(**{name: value for name, value in offered.items() if name in args})


def call_input_fn(input_fn: Callable, mode: str, params: Any, config: Any) -> Inputs:
    """Calls `input_fn` in the current graph and reads its result (module doc)."""
    result = as_dataset(invoke_input_fn(input_fn, mode, params, config))
    where = f"the input_fn ({_name(input_fn)})"
    if isinstance(result, tf.data.Dataset):
        data = tf.compat.v1.data
        iterator = data.Iterator.from_structure(
            data.get_output_types(result), data.get_output_shapes(result),
            output_classes=data.get_output_classes(result))
        start = iterator.make_initializer(result)
        # Dropping the data's iterator as soon as a pass ends: tf.data's autotuning
        # thread sleeps longer the older an idle iterator is, and destroying it later
        # (the next evaluation's initializer) was once seen to stall for 14 s.
        release = iterator.make_initializer(result.take(0))
        features, labels = split_features_and_labels(iterator.get_next(),
                                                     f"{where}'s dataset")
        return Inputs(features, labels, (iterator_initializer_hook(start),), release)
    features, labels = split_features_and_labels(result, where)
    return Inputs(features, labels, ())


def reads_dataset_or_queue(features: Any) -> bool:
    """Whether `features` end (a tf.data iterator's output among the top-level
    tensors, or queue runners in the graph): else predict would read them forever."""
    tensors = [t for t in tf.nest.flatten(features) if isinstance(t, tf.Tensor)]
    if any(t.op.type in ("IteratorGetNext", "IteratorGetNextSync") for t in tensors):
        return True
    return bool(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS))


def iterator_from_input_fn(input_fn: Callable, mode: str | None, params: Any, config: Any,
                           distribution: Any = None) -> tuple[Any, list]:
    """An iterator over `input_fn`'s dataset and the hooks initializing it. With a
    `distribution` (anything with `make_input_fn_iterator`), the input_fn is called
    through it and gets its `input_context` if it names one."""
    if distribution is not None:
        iterator = strategy_iterator(distribution, lambda input_context: invoke_input_fn(
            input_fn, mode, params, config, input_context))
        initialize = getattr(iterator, "initialize", None)
        hooks = [iterator_initializer_hook(initialize())] if callable(initialize) else []
        return iterator, hooks
    result = as_dataset(invoke_input_fn(input_fn, mode, params, config))
    if not isinstance(result, tf.data.Dataset):
        raise TypeError(f"input_fn ({_name(input_fn)}) must return a tf.data.Dataset to be "
                        f"read through an iterator, returned: {result!r}")
    iterator = tf.compat.v1.data.make_initializable_iterator(result)
    return iterator, [iterator_initializer_hook(iterator.initializer)]


def strategy_iterator(strategy: Any, dataset_fn: Callable[[Any], Any]) -> Any:
    """`strategy.make_input_fn_iterator(dataset_fn)`, its datasets without tf.data's
    autotuning unless the input's options ask for it (module doc)."""

    def dataset(input_context: Any) -> Any:
        result = dataset_fn(input_context)
        if isinstance(result, tf.data.Dataset):
            return without_autotune_unless_asked(result)
        return result

    with device_datasets_without_autotune():
        return strategy.make_input_fn_iterator(dataset)


def without_autotune_unless_asked(dataset: Any) -> Any:
    """`dataset` with tf.data's autotuning off, unless its options set
    `autotune.enabled` (then as they say)."""
    with warnings.catch_warnings():  # in a graph, options() warns that it gives the
        warnings.simplefilter("ignore")  # Python-side options: the input_fn's, as wanted
        asked = dataset.options().autotune.enabled
    return dataset if asked is not None else autotune_off(dataset)
