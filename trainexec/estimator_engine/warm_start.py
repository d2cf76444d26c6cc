"""`WarmStartSettings`: start a new model from another run's checkpoint.

Applied when the chief starts training without a checkpoint of its own in
`model_dir`, through `tf.compat.v1.train.warm_start` (public TensorFlow): the listed
variables take their initial values from `ckpt_to_initialize_from` (a checkpoint or
a model_dir), optionally renamed or remapped to a new vocabulary.

Example:
    ```python
    Estimator(model_fn, warm_start_from="/runs/previous")
    Estimator(model_fn, warm_start_from=WarmStartSettings(
        "/runs/previous", vars_to_warm_start="dense.*"))
    ```
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["WarmStartSettings", "as_warm_start_settings", "warm_start"]


class WarmStartSettings(NamedTuple):
    """What to warm-start from (tf.estimator's fields and defaults)."""

    ckpt_to_initialize_from: str
    vars_to_warm_start: Any = ".*"
    var_name_to_vocab_info: Any = None
    var_name_to_prev_var_name: Any = None


def as_warm_start_settings(value: Any) -> WarmStartSettings | None:
    """`value` (None, a path or WarmStartSettings) as WarmStartSettings or None."""
    if value is None or isinstance(value, WarmStartSettings):
        return value
    if hasattr(value, "__fspath__"):
        value = str(value)
    if isinstance(value, str):
        if not value:
            raise ValueError("Estimator `warm_start_from` is empty: give a checkpoint or "
                             "model_dir path, or None")
        return WarmStartSettings(value)
    raise ValueError(f"Estimator `warm_start_from` must be a path or a WarmStartSettings, "
                     f"given: {value!r}")


def warm_start(settings: WarmStartSettings) -> None:
    """Sets the current graph's matching variables' initializers (module doc)."""
    import tensorflow as tf

    tf.compat.v1.train.warm_start(
        settings.ckpt_to_initialize_from, vars_to_warm_start=settings.vars_to_warm_start,
        var_name_to_vocab_info=settings.var_name_to_vocab_info,
        var_name_to_prev_var_name=settings.var_name_to_prev_var_name)
