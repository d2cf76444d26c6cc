"""`WarmStartSettings`: start a new model from another run's checkpoint or SavedModel.

Applied while a model has no checkpoint of its own in `model_dir`: when the chief starts
training, and when evaluating or predicting before any training, through
`tf.compat.v1.train.warm_start` (public TensorFlow): the listed variables take their
initial values from `ckpt_to_initialize_from`, optionally renamed or remapped to a new
vocabulary. An export before any training takes its variables from there too.

`ckpt_to_initialize_from` may be a checkpoint, a model_dir (its newest checkpoint) or,
given as a path, a SavedModel directory (its `variables/variables`), as tf.estimator
read `warm_start_from`.

Example:
    ```python
    Estimator(model_fn, warm_start_from="/runs/previous")
    Estimator(model_fn, warm_start_from="/runs/previous/export/1700000000")  # a SavedModel
    Estimator(model_fn, warm_start_from=WarmStartSettings(
        "/runs/previous", vars_to_warm_start="dense.*"))
    ```
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

__all__ = ["WarmStartSettings", "as_warm_start_settings", "warm_start",
           "warm_start_checkpoint"]


class WarmStartSettings(NamedTuple("WarmStartSettings", [
        ("ckpt_to_initialize_from", str), ("vars_to_warm_start", Any),
        ("var_name_to_vocab_info", Any), ("var_name_to_prev_var_name", Any)])):
    """What to warm-start from (tf.estimator's fields and defaults): every trainable
    variable (`vars_to_warm_start=".*"`), unchanged vocabularies and names."""

    def __new__(cls, ckpt_to_initialize_from: Any, vars_to_warm_start: Any = ".*",
                var_name_to_vocab_info: Any = None,
                var_name_to_prev_var_name: Any = None) -> "WarmStartSettings":
        if isinstance(ckpt_to_initialize_from, bytes):
            ckpt_to_initialize_from = ckpt_to_initialize_from.decode()
        elif hasattr(ckpt_to_initialize_from, "__fspath__"):
            ckpt_to_initialize_from = os.fspath(ckpt_to_initialize_from)
        if not ckpt_to_initialize_from:
            raise ValueError(
                "`ckpt_to_initialize_from` MUST be set in WarmStartSettings, given: "
                f"{ckpt_to_initialize_from!r}: give the checkpoint, model_dir or SavedModel "
                "to take the variables from")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start,
                               var_name_to_vocab_info or {}, var_name_to_prev_var_name or {})


def _saved_model_variables(path: str) -> str | None:
    """`<path>/variables/variables` if `path` is a SavedModel with variables, else None."""
    import tensorflow as tf

    prefix = os.path.join(path, "variables", "variables")
    return prefix if tf.io.gfile.exists(prefix + ".index") else None


def as_warm_start_settings(value: Any) -> WarmStartSettings | None:
    """`value` (None, a path or WarmStartSettings) as WarmStartSettings or None."""
    if value is None or isinstance(value, WarmStartSettings):
        return value
    if isinstance(value, bytes):
        value = value.decode()
    elif hasattr(value, "__fspath__"):
        value = os.fspath(value)
    if isinstance(value, str):
        if not value:
            raise ValueError("Estimator `warm_start_from` is empty: give a checkpoint, "
                             "model_dir or SavedModel path, or None")
        return WarmStartSettings(_saved_model_variables(value) or value)
    raise ValueError(f"warm_start_from must be a string or a WarmStartSettings, instead got "
                     f"{type(value).__name__}: give a checkpoint, model_dir or SavedModel "
                     "path, or trainexec.estimator.WarmStartSettings(...)")


def warm_start_checkpoint(settings: WarmStartSettings) -> str | None:
    """The checkpoint `settings` takes variables from (a model_dir's newest), or None."""
    import tensorflow as tf

    path = settings.ckpt_to_initialize_from
    if tf.io.gfile.isdir(path):
        return tf.train.latest_checkpoint(path)
    return path


def warm_start(settings: WarmStartSettings) -> None:
    """Sets the current graph's matching variables' initializers (module doc)."""
    import tensorflow as tf

    tf.compat.v1.train.warm_start(
        settings.ckpt_to_initialize_from, vars_to_warm_start=settings.vars_to_warm_start,
        var_name_to_vocab_info=settings.var_name_to_vocab_info,
        var_name_to_prev_var_name=settings.var_name_to_prev_var_name)
