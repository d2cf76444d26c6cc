"""Calling a Keras job's `input_fn` and checking what it returns.

A `train_spec.input_fn` (or an eval one) takes nothing, or one
`tf.distribute.InputContext` when it shards and batches per input pipeline
itself (a first parameter without a default, or named `input_context`, `context` or
`ctx`); it returns a `tf.data.Dataset`. A parameter with a default and another name
(`batch_size=64`) keeps its default, and the log says so. `KerasTrainer`'s `fit` path
(`trainexec.keras.fit.training`) and its own Keras 3 loop
(`trainexec.keras.fit.distributed_fit`) both call it through here.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Callable

__all__ = ["CONTEXT_NAMES", "call_input_fn", "checked_dataset", "input_options",
           "takes_argument"]

logger = logging.getLogger(__name__)


# A positional parameter with a default is the context only under one of these names
# (`def input_fn(input_context=None)` works with and without a strategy); any other
# (`def input_fn(batch_size=64)`) keeps its default.
CONTEXT_NAMES = frozenset({"input_context", "context", "ctx"})


def _first_positional(fn: Callable) -> inspect.Parameter | None:
    """`fn`'s first parameter that a positional argument fills (`*args` included), or
    None (none, or no readable signature)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return next((p for p in parameters if p.kind in (
        p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)), None)


def takes_argument(fn: Callable) -> bool:
    """Whether `fn` wants the `InputContext` as its one positional argument: the first
    parameter a positional argument fills is `*args`, has no default, or is named as a
    context (`CONTEXT_NAMES`)."""
    first = _first_positional(fn)
    if first is None:
        return False
    return (first.kind == first.VAR_POSITIONAL or first.default is first.empty
            or first.name in CONTEXT_NAMES)


def call_input_fn(input_fn: Callable, context: Any = None) -> Any:
    """`input_fn(context)` when it takes an argument, else `input_fn()`.

    `context` defaults to a single-pipeline `tf.distribute.InputContext`.
    """
    if not takes_argument(input_fn):
        first = _first_positional(input_fn)
        if first is not None and context is not None:
            logger.info("%s is called without arguments: its parameter %r has a default; "
                        "to be given the tf.distribute.InputContext, name it "
                        "'input_context' or give it no default",
                        getattr(input_fn, "__name__", "input_fn"), first.name)
        return input_fn()
    if context is None:
        import tensorflow as tf

        context = tf.distribute.InputContext()
    return input_fn(context)


def checked_dataset(value: Any, what: str = "train_spec.input_fn") -> Any:
    """`value` when it is a `tf.data.Dataset`; else a TypeError naming `what`
    returned it and what KerasTrainer needs instead."""
    import tensorflow as tf

    if not isinstance(value, tf.data.Dataset):
        raise TypeError(
            f"{what} returned {type(value).__name__}; KerasTrainer needs a tf.data.Dataset "
            "of (features, labels) batches, repeated (dataset.repeat()) so that it does "
            "not run out before max_steps")
    return value


def input_options() -> Any:
    """Without an accelerator, batches stay where the input pipeline made them (no
    `MultiDeviceIterator`): there is no device to fetch to, and that iterator's threads
    held a finished MultiWorkerMirroredStrategy task's exit 7 to 15 s (its destructor
    waits for them with the interpreter's lock held). With one, TensorFlow's default."""
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"):
        return None
    return tf.distribute.InputOptions(experimental_fetch_to_device=False)
