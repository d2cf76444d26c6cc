"""Calling the user's functions: a `model_fn` checked before anything is built, an
`input_fn` whose result is turned into features and labels.

`check_model_fn` refuses, as tf.estimator does (ValueError), a `model_fn` without a
`features` argument, with arguments the Estimator cannot fill, or without `params`
while params are given. `call_model_fn` passes `labels`, `mode`, `params` and
`config` to those it names, and checks it returns an `EstimatorSpec`.
`call_input_fn` passes `mode`, `params`, `config` likewise and accepts a
`tf.data.Dataset` (of features, or `(features, labels)`), or `(features, labels)` /
features as tensors; anything else is a TypeError naming what it got. The tensors of
`trainexec.estimator.inputs`' input_fns are read as the dataset behind them.

Example:
    ```python
    check_model_fn(model_fn, params={"units": 16})
    inputs = call_input_fn(input_fn, ModeKeys.TRAIN, params, config)
    spec = call_model_fn(model_fn, inputs.features, inputs.labels, ModeKeys.TRAIN,
                         params, config)
    ```
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, NamedTuple

from trainexec.estimator_engine.model_spec import EstimatorSpec, ModeKeys

__all__ = ["Inputs", "call_input_fn", "call_model_fn", "check_model_fn", "fn_args",
           "iterator_initializer_hook"]

_MODEL_FN_ARGS = ("features", "labels", "mode", "params", "config")
_INPUT_FN_ARGS = ("mode", "params", "config")


def fn_args(fn: Callable) -> tuple[str, ...]:
    """The names of `fn`'s parameters (`self` of a bound method left out; a
    functools.partial's bound ones too, keyword ones included)."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError) as err:
        raise TypeError(f"{fn!r} is not a function whose arguments can be read: {err}")
    bound = set(fn.keywords) if isinstance(fn, functools.partial) else set()
    return tuple(name for name, p in parameters.items()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name not in bound)


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def check_model_fn(model_fn: Any, params: Any) -> None:
    """ValueError naming the problem with `model_fn`'s signature, if any (module doc)."""
    if not callable(model_fn):
        raise TypeError(f"Estimator `model_fn` must be callable, given: {model_fn!r}")
    args = fn_args(model_fn)
    if "features" not in args:
        raise ValueError(f"model_fn ({_name(model_fn)}) must include a `features` argument: "
                         "def model_fn(features, labels, mode, params, config) (labels, "
                         "mode, params and config as you need them)")
    unexpected = [a for a in args if a not in _MODEL_FN_ARGS]
    if unexpected:
        raise ValueError(f"model_fn ({_name(model_fn)}) has arguments the Estimator cannot "
                         f"fill: {', '.join(unexpected)}; it passes only "
                         f"{', '.join(_MODEL_FN_ARGS)}")
    if params and "params" not in args:
        raise ValueError(f"model_fn ({_name(model_fn)}) has no `params` argument, but params "
                         f"are given to the Estimator ({params!r}): add `params` to the "
                         "model_fn's arguments, or drop params")


def call_model_fn(model_fn: Callable, features: Any, labels: Any, mode: str, params: Any,
                  config: Any) -> EstimatorSpec:
    """`model_fn`'s EstimatorSpec for `mode`; TypeError if it returns anything else."""
    args = fn_args(model_fn)
    kwargs: dict[str, Any] = {}
    if "labels" in args:
        kwargs["labels"] = labels
    elif labels is not None and mode != ModeKeys.PREDICT:
        raise ValueError(f"model_fn ({_name(model_fn)}) takes no `labels`, but the input_fn "
                         "gives labels: add `labels` to its arguments, or return features "
                         "only")
    if "mode" in args:
        kwargs["mode"] = mode
    if "params" in args:
        kwargs["params"] = params
    if "config" in args:
        kwargs["config"] = config
    spec = model_fn(features=features, **kwargs)
    if not isinstance(spec, EstimatorSpec):  # ValueError, as tf.estimator raised
        raise ValueError(f"model_fn ({_name(model_fn)}) must return a "
                        f"trainexec.estimator.EstimatorSpec, returned: {spec!r}")
    if spec.mode != mode:
        raise ValueError(f"model_fn ({_name(model_fn)}) was called in mode {mode!r} but "
                         f"returned an EstimatorSpec for mode {spec.mode!r}: pass `mode` "
                         "through to EstimatorSpec")
    return spec


class Inputs(NamedTuple):
    """What an input_fn gave: `features`, `labels` (or None), the hooks that
    (re)initialize a dataset's iterator in each new session, and the op that points
    that iterator at an empty dataset (None without a dataset)."""

    features: Any
    labels: Any
    hooks: tuple
    release: Any = None


def iterator_initializer_hook(initializer: Any) -> Any:
    """A SessionRunHook initializing a dataset's iterator in every session created (a
    MonitoredSession recreates its session after a ps failure)."""
    import tensorflow as tf

    class IteratorInitializerHook(tf.compat.v1.train.SessionRunHook):
        def after_create_session(self, session, coord):
            del coord
            session.run(initializer)

    return IteratorInitializerHook()


def _split(element: Any, where: str) -> tuple[Any, Any]:
    if isinstance(element, (tuple, list)):
        if len(element) != 2:
            raise TypeError(f"{where} gives a tuple of {len(element)} items; an input_fn "
                            "gives features, or (features, labels)")
        return element[0], element[1]
    return element, None


def call_input_fn(input_fn: Callable, mode: str, params: Any, config: Any) -> Inputs:
    """Calls `input_fn` in the current graph (module doc)."""
    import tensorflow as tf

    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn!r}")
    args = fn_args(input_fn)
    kwargs = {name: value for name, value in
              (("mode", mode), ("params", params), ("config", config)) if name in args}
    result = input_fn(**kwargs)
    from trainexec.estimator_engine.inputs.feeding import dataset_behind
    behind = dataset_behind(result)  # numpy_input_fn's / pandas_input_fn's tensors
    if behind is not None:
        result = behind  # read through a rewindable iterator, as a dataset is
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
        features, labels = _split(iterator.get_next(), "the input_fn's dataset")
        return Inputs(features, labels, (iterator_initializer_hook(start),), release)
    if isinstance(result, (tuple, list)):
        features, labels = _split(result, "the input_fn")
    else:
        features, labels = result, None
    if not _is_features(features):
        raise TypeError(f"input_fn ({_name(input_fn)}) returned {result!r}: it must return a "
                        "tf.data.Dataset, or (features, labels) where features is a Tensor "
                        "or a dict of Tensors")
    return Inputs(features, labels, ())


def _is_features(features: Any) -> bool:
    import tensorflow as tf

    kinds = (tf.Tensor, tf.SparseTensor, tf.RaggedTensor)
    if isinstance(features, dict):
        return bool(features) and all(isinstance(v, kinds) for v in features.values())
    return isinstance(features, kinds)
