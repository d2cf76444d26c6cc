"""`call_logit_fn` (tf.estimator.experimental's): calling a `logit_fn` from a `model_fn`.

A `logit_fn(features, mode, params, config)` computes a model's logits, and may take
any of `mode`, `params` and `config` (`features` always). `call_logit_fn` passes
those it names and checks the result: a Tensor, or a dict of Tensors by string name
(one per head).

Example:
    ```python
    def logit_fn(features, mode):
        return tf.compat.v1.layers.dense(features["x"], 3)

    def model_fn(features, labels, mode, params, config):
        logits = call_logit_fn(logit_fn, features, mode, params, config)
        ...
    ```
"""

from __future__ import annotations

from typing import Any, Callable

from trainexec.estimator_engine.calls import fn_args

__all__ = ["call_logit_fn"]

_OPTIONAL_ARGS = ("mode", "params", "config")


def call_logit_fn(logit_fn: Callable, features: Any, mode: str, params: Any,
                  config: Any) -> Any:
    """`logit_fn(features=features, ...)` with whichever of `mode`, `params` and
    `config` it takes; ValueError unless it returns a Tensor or a dict of Tensors
    keyed by strings."""
    import tensorflow as tf

    given = {"mode": mode, "params": params, "config": config}
    args = fn_args(logit_fn)
    result = logit_fn(features=features, **{name: given[name] for name in _OPTIONAL_ARGS
                                            if name in args})
    if isinstance(result, tf.Tensor):
        return result
    if isinstance(result, dict) and all(isinstance(key, str) and isinstance(value, tf.Tensor)
                                        for key, value in result.items()):
        return result
    wrong = ""
    if isinstance(result, dict):
        wrong = "; wrong entries: " + ", ".join(
            f"{key!r}: {type(value).__name__}" for key, value in result.items()
            if not (isinstance(key, str) and isinstance(value, tf.Tensor)))
    raise ValueError(
        "logit_fn should return a Tensor or a dictionary mapping strings to Tensors. "
        f"logit_fn ({getattr(logit_fn, '__name__', logit_fn)}) returned a "
        f"{type(result).__name__}: {result!r}. Return the logits Tensor, or "
        f"{{head name (a string): logits Tensor}} for several heads{wrong}")
