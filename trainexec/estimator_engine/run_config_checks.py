"""The rules a `RunConfig`'s values follow, checked when it is built and on `replace()`.

* `check_fields`: one rule per field (`FIELD_RULES`), None always allowed; a value that
  breaks one is a ValueError starting with tf.estimator's words for the rule, then the
  value and what to give instead:

  ```text
  save_checkpoints_steps should be >= 0. RunConfig(save_checkpoints_steps=-1): give a
  number of steps ...
  ```

  trainexec is stricter about types than tf.estimator in one way: a number of steps is an
  integer and a number of seconds a number (not a bool, not a string).
* `constructor_saving` / `replaced_saving`: how often checkpoints are saved. Built with
  neither `save_checkpoints_steps` nor `save_checkpoints_secs`, every 600 s; with one,
  that one only; both (not None) is refused. `replace()` setting one turns the other off.
* `resolve_model_dir`: the constructor's `model_dir` and TF_CONFIG's `model_dir` agree, or
  only one is given.

Example:
    ```python
    constructor_saving(100, USE_DEFAULT)   # (100, None): every 100 steps
    ```
"""

from __future__ import annotations

import dataclasses
import logging
import numbers
import os
from typing import Any, Callable, Mapping

from trainexec.errors import ConfigError

__all__ = ["DEFAULT_SAVE_SECS", "FIELD_RULES", "PROTOCOLS", "USE_DEFAULT", "check_fields",
           "constructor_saving", "path_to_str", "replaced_saving", "resolve_model_dir"]

logger = logging.getLogger(__name__)

USE_DEFAULT: Any = object()  # "not given", for the two saving arguments
DEFAULT_SAVE_SECS = 600
PROTOCOLS = ("grpc", "grpc+verbs")
_BOTH_SAVINGS = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."


def _integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _takes_only_op(device_fn: Any) -> bool:
    from trainexec.estimator_engine.calls import fn_args

    try:
        return callable(device_fn) and set(fn_args(device_fn)) == {"op"}
    except TypeError:  # a callable whose signature cannot be read
        return False


def _is_config_proto(value: Any) -> bool:
    import tensorflow as tf

    return isinstance(value, tf.compat.v1.ConfigProto)


@dataclasses.dataclass(frozen=True)
class FieldRule:
    """`field` must satisfy `ok` (or be None); else `words` (tf.estimator's), then `fix`."""

    field: str
    ok: Callable[[Any], bool]
    words: str
    fix: str


FIELD_RULES = (
    FieldRule("model_dir", lambda v: bool(v), "model_dir should be non-empty",
              "give a directory, or None for a temporary one"),
    FieldRule("save_summary_steps", lambda v: _integer(v) and v >= 0,
              "save_summary_steps should be >= 0",
              "give a whole number of steps, or 0 or None for no summaries"),
    FieldRule("save_checkpoints_steps", lambda v: _integer(v) and v >= 0,
              "save_checkpoints_steps should be >= 0",
              "give a whole number of steps, or None to save by time "
              "(save_checkpoints_secs)"),
    FieldRule("save_checkpoints_secs", lambda v: _number(v) and v >= 0,
              "save_checkpoints_secs should be >= 0",
              "give a number of seconds, or None to save by steps (save_checkpoints_steps)"),
    FieldRule("session_config", _is_config_proto,
              "session_config must be instance of ConfigProto",
              "give a tf.compat.v1.ConfigProto, or None for the default"),
    FieldRule("keep_checkpoint_max", lambda v: _integer(v) and v >= 0,
              "keep_checkpoint_max should be >= 0",
              "give how many recent checkpoints to keep, or 0 or None to keep them all"),
    FieldRule("keep_checkpoint_every_n_hours", lambda v: _number(v) and v > 0,
              "keep_checkpoint_every_n_hours should be > 0",
              "give a number of hours (the default, 10000, keeps none for being old)"),
    FieldRule("log_step_count_steps", lambda v: _integer(v) and v > 0,
              "log_step_count_steps should be > 0",
              "give a whole number of steps, or None for no step-rate logs"),
    FieldRule("tf_random_seed", _integer, "tf_random_seed must be integer",
              "give an int such as 42, or None for no fixed seed"),
    FieldRule("experimental_max_worker_delay_secs", lambda v: _integer(v) and v >= 0,
              "experimental_max_worker_delay_secs must be an integer if set",
              "give a whole number of seconds >= 0, or None for the default (up to 60 s)"),
    FieldRule("session_creation_timeout_secs", lambda v: _number(v) and v > 0,
              "session_creation_timeout_secs should be > 0",
              "give a number of seconds (default 7200)"),
    FieldRule("device_fn", _takes_only_op,
              'device_fn must be callable with exactly one argument "op"',
              "give a function of the op, e.g. lambda op: '/cpu:0', or None for the "
              "default placement"),
    FieldRule("protocol", lambda v: v in PROTOCOLS, "protocol should be grpc or grpc+verbs",
              "give one of them, or None for grpc"),
)


def check_fields(values: Mapping[str, Any], where: str = "RunConfig") -> None:
    """Raises ValueError for the first value in `values` that breaks its rule; `where`
    ("RunConfig" or "RunConfig.replace") is how the message names the call."""
    for rule in FIELD_RULES:
        value = values.get(rule.field)
        if value is not None and not rule.ok(value):
            raise ValueError(f"{rule.words}. {where}({rule.field}={value!r}): {rule.fix}")


def constructor_saving(steps: Any, secs: Any) -> tuple[Any, Any]:
    """(save_checkpoints_steps, save_checkpoints_secs) from the constructor's arguments,
    either of which may be USE_DEFAULT."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return None, DEFAULT_SAVE_SECS
    steps = None if steps is USE_DEFAULT else steps
    secs = None if secs is USE_DEFAULT else secs
    if steps is not None and secs is not None:
        raise ValueError(
            f"{_BOTH_SAVINGS} RunConfig(save_checkpoints_steps={steps!r}, "
            f"save_checkpoints_secs={secs!r}): give one of them (the other None)")
    return steps, secs


def replaced_saving(steps: Any, secs: Any, changes: Mapping[str, Any]) -> tuple[Any, Any]:
    """(steps, secs) after `replace(**changes)`: setting one turns the other off."""
    new_steps = changes.get("save_checkpoints_steps", steps)
    new_secs = changes.get("save_checkpoints_secs", secs)
    if "save_checkpoints_steps" in changes and "save_checkpoints_secs" in changes:
        if new_steps is not None and new_secs is not None:
            raise ValueError(
                f"{_BOTH_SAVINGS} RunConfig.replace(save_checkpoints_steps={new_steps!r}, "
                f"save_checkpoints_secs={new_secs!r}): replace one of them, which turns "
                "the other off")
    elif "save_checkpoints_steps" in changes and new_steps is not None:
        new_secs = None
    elif "save_checkpoints_secs" in changes and new_secs is not None:
        new_steps = None
    return new_steps, new_secs


def path_to_str(path: Any) -> Any:
    """A path-like object's path (a `pathlib.Path`), anything else as it is."""
    return os.fspath(path) if hasattr(path, "__fspath__") else path


def resolve_model_dir(given: Any, tf_config: Mapping[str, Any]) -> Any:
    """The RunConfig's model_dir: `given` (the constructor's) or TF_CONFIG's, which must
    agree when both are set."""
    given = path_to_str(given)
    if given == "":
        check_fields({"model_dir": given})
    from_tf_config = tf_config.get("model_dir")
    if from_tf_config == "":
        raise ConfigError(
            'model_dir in TF_CONFIG should be non-empty. TF_CONFIG has "model_dir": "": '
            'give the directory, or leave "model_dir" out')
    if from_tf_config is None:
        return given
    if not isinstance(from_tf_config, str):
        raise ConfigError(
            f"TF_CONFIG model_dir is {from_tf_config!r}: expected a directory (a string)")
    if given and os.path.normpath(str(given)) != os.path.normpath(from_tf_config):
        raise ConfigError(
            "`model_dir` provided in RunConfig construct, if set, must have the same value "
            f"as the model_dir in TF_CONFIG. RunConfig(model_dir={given!r}) but TF_CONFIG "
            f"has \"model_dir\": {from_tf_config!r}: give the directory in one place only, "
            "or the same one in both")
    logger.info("Using model_dir in TF_CONFIG: %s", from_tf_config)
    return given or from_tf_config
