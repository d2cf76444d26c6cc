"""The record of a private TensorFlow/Keras attribute trainexec relies on, and its check.

trainexec uses a few private TensorFlow, tf.estimator and Keras attributes (and patches
a few classes) where no public API does the job. Each one lives in a trainer's `compat/`
package (`trainexec.estimator_trainer.compat`, `trainexec.keras.compat`), whose `INVENTORY` lists
them as `Internal` records: the owner (an import path), the attribute, the TensorFlow
lines it was seen on, and what trainexec does when it is missing. The inventory tests
(`tests/test_estimator_trainer_compat.py`, `tests/test_keras_compat.py`) resolve every record of
the line they run on with `missing`, so a TensorFlow or Keras release that renames one
fails a test instead of quietly turning a fix into a no-op.

The lines (`LINES`, as `./scripts/test.sh` runs them):

* `"2.15"`: TensorFlow 2.15 with Keras 2.15 and tensorflow-estimator;
* `"2.21 Keras 3"`: current TensorFlow with Keras 3 as `tf.keras`;
* `"2.21 tf_keras"`: current TensorFlow with `TF_USE_LEGACY_KERAS=1` (tf_keras).

Example:
    ```python
    entry = Internal(owner="tensorflow.python.training.session_manager.SessionManager",
                     attribute="__init__", lines=("2.15",),
                     when_missing="workers keep TensorFlow's 30 s re-check")
    assert missing(entry) is None  # on TensorFlow 2.15
    ```
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import Any

__all__ = ["ATTRIBUTE", "ASSIGNED", "Internal", "LINES", "LINE_KERAS_3", "LINE_TF_2_15",
           "LINE_TF_KERAS", "PARAMETER", "current_line", "missing", "resolve"]

LINE_TF_2_15 = "2.15"
LINE_KERAS_3 = "2.21 Keras 3"
LINE_TF_KERAS = "2.21 tf_keras"
LINES = (LINE_TF_2_15, LINE_KERAS_3, LINE_TF_KERAS)

# How an attribute is found on its owner.
ATTRIBUTE = "attribute"  # getattr(owner, attribute): a method, class attribute, function
ASSIGNED = "assigned"    # an instance attribute: the owner's source (or a base class's)
#                          assigns `<object>.<attribute> = ...`
PARAMETER = "parameter"  # a parameter of the callable owner (inspect.signature)
_KINDS = (ATTRIBUTE, ASSIGNED, PARAMETER)


@dataclasses.dataclass(frozen=True)
class Internal:
    """A private TensorFlow/Keras attribute (or patch) trainexec relies on.

    Attributes:
      owner: the import path of the module, class or function that has it.
      attribute: its name on `owner`.
      lines: the TensorFlow lines (`LINES`) it was seen on, and is checked on.
      when_missing: what trainexec does without it.
      kind: how it is found (`ATTRIBUTE`, `ASSIGNED`, `PARAMETER`).
      used_in: where trainexec uses it, when that is not the compat module itself.
    """

    owner: str
    attribute: str
    lines: tuple[str, ...]
    when_missing: str
    kind: str = ATTRIBUTE
    used_in: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Internal kind {self.kind!r}: expected one of {_KINDS}")
        unknown = [line for line in self.lines if line not in LINES]
        if unknown or not self.lines:
            raise ValueError(f"Internal lines {self.lines!r}: expected some of {LINES}")

    @property
    def name(self) -> str:
        return f"{self.owner}.{self.attribute}"


def current_line() -> str:
    """The line this process runs: `"2.15"` below TensorFlow 2.16, else by what
    `tf.keras` is (tf_keras or Keras 3)."""
    import tensorflow as tf

    major, minor = (int(part) for part in tf.__version__.split(".")[:2])
    if (major, minor) < (2, 16):
        return LINE_TF_2_15
    return LINE_TF_KERAS if tf.keras.__name__.startswith("tf_keras") else LINE_KERAS_3


def resolve(path: str) -> Any:
    """The object at import path `path` (a module, or attributes under one; a public
    alias such as `tensorflow.distribute.Strategy` too, where a module of that name
    exists but the alias is an attribute of its parent); ImportError or AttributeError
    saying which part is missing (the longest module that imports)."""
    parts = path.split(".")
    first_error: AttributeError | None = None
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            if split == 1:
                raise
            continue
        try:
            for index, part in enumerate(parts[split:], start=split):
                if not hasattr(obj, part):
                    raise AttributeError(f"{'.'.join(parts[:index])} has no {part!r}")
                obj = getattr(obj, part)
        except AttributeError as err:
            first_error = first_error or err
            continue
        return obj
    raise first_error or ImportError(path)


def _sources(owner: Any) -> list[str]:
    objects = inspect.getmro(owner) if inspect.isclass(owner) else (owner,)
    found = []
    for obj in objects:
        try:
            found.append(inspect.getsource(obj))
        except (OSError, TypeError):
            continue
    return found


def missing(internal: Internal) -> str | None:
    """Why `internal` is not there in this installation, or None when it is."""
    try:
        owner = resolve(internal.owner)
    except (ImportError, AttributeError) as err:
        return f"{internal.owner} cannot be resolved: {type(err).__name__}: {err}"
    if internal.kind == ATTRIBUTE:
        if hasattr(owner, internal.attribute):
            return None
        return f"{internal.owner} has no attribute {internal.attribute!r}"
    if internal.kind == PARAMETER:
        try:
            parameters = inspect.signature(owner).parameters
        except (TypeError, ValueError) as err:
            return f"{internal.owner} has no signature: {err}"
        if internal.attribute in parameters:
            return None
        return f"{internal.owner} takes no parameter {internal.attribute!r}"
    assignment = re.compile(rf"\.{re.escape(internal.attribute)}\s*(:[^=\n]*)?=(?!=)")
    if any(assignment.search(source) for source in _sources(owner)):
        return None
    return (f"{internal.owner} (or a base class) no longer assigns "
            f"`.{internal.attribute} = ...` in its source")
