"""Calling the user's `model_fn`: its signature checked before anything is built, its
arguments filled, what it returns checked.

`check_model_fn` refuses, as tf.estimator does (ValueError, with its words), a missing
`model_fn`, one without a `features` argument, with arguments the Estimator cannot fill,
or without `params` while params are given. `call_model_fn` passes `labels`, `mode`,
`params` and `config` to those it names (labels given to a `model_fn` without a
`labels` argument are a ValueError), and checks it returns an `EstimatorSpec`.
Calling an `input_fn` is `input_fn`'s.

Example:
    ```python
    check_model_fn(model_fn, params={"units": 16})
    spec = call_model_fn(model_fn, features, labels, ModeKeys.TRAIN, params, config)
    ```
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from trainexec.estimator_engine.model_spec import EstimatorSpec, ModeKeys

__all__ = ["MODEL_FN_ARGS", "call_model_fn", "check_model_fn", "fn_args"]

MODEL_FN_ARGS = ("features", "labels", "mode", "params", "config")


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
    if model_fn is None:
        raise ValueError("model_fn must be provided to Estimator: give "
                         "Estimator(model_fn=...), a function "
                         "model_fn(features, labels, mode, params, config) returning an "
                         "EstimatorSpec (labels, mode, params and config as it needs them)")
    if not callable(model_fn):
        raise TypeError(f"Estimator `model_fn` must be callable, given: {model_fn!r}")
    args = fn_args(model_fn)
    if "features" not in args:
        raise ValueError(f"model_fn ({_name(model_fn)}) must include a `features` argument: "
                         "def model_fn(features, labels, mode, params, config) (labels, "
                         "mode, params and config as you need them)")
    unexpected = [a for a in args if a not in MODEL_FN_ARGS]
    if unexpected:
        raise ValueError(f"model_fn ({_name(model_fn)}) has arguments the Estimator cannot "
                         f"fill: {', '.join(unexpected)}; it passes only "
                         f"{', '.join(MODEL_FN_ARGS)}")
    if params and "params" not in args:
        raise ValueError(f"model_fn ({_name(model_fn)}) does not include params argument, "
                         f"but params ({params!r}) are given to the Estimator: add `params` "
                         "to the model_fn's arguments, or drop params")


def call_model_fn(model_fn: Callable, features: Any, labels: Any, mode: str, params: Any,
                  config: Any) -> EstimatorSpec:
    """`model_fn`'s EstimatorSpec for `mode`; ValueError if it returns anything else."""
    args = fn_args(model_fn)
    kwargs: dict[str, Any] = {}
    if "labels" in args:
        kwargs["labels"] = labels
    elif labels is not None and mode != ModeKeys.PREDICT:
        raise ValueError(f"model_fn does not take labels, but input_fn returns labels: add "
                         f"`labels` to the arguments of model_fn ({_name(model_fn)}), or "
                         "return features only from the input_fn")
    if "mode" in args:
        kwargs["mode"] = mode
    if "params" in args:
        kwargs["params"] = params
    if "config" in args:
        kwargs["config"] = config
    spec = model_fn(features=features, **kwargs)
    if not isinstance(spec, EstimatorSpec):  # ValueError, as tf.estimator raised
        raise ValueError(f"model_fn should return an EstimatorSpec; model_fn "
                         f"({_name(model_fn)}) returned {spec!r} in mode {mode!r}: return "
                         "trainexec.estimator.EstimatorSpec(mode, ...)")
    if spec.mode is not None and spec.mode != mode:
        raise ValueError(f"model_fn ({_name(model_fn)}) was called in mode {mode!r} but "
                         f"returned an EstimatorSpec for mode {spec.mode!r}: pass `mode` "
                         "through to EstimatorSpec")
    return spec
