"""Keras 3 variables' `assign_add` / `assign_sub` made atomic on a ParameterServerStrategy ps.

| attribute or patch | seen on | when it is missing |
| --- | --- | --- |
| `keras.src.backend.tensorflow.core.Variable.assign_add`, `.assign_sub` replaced on the class inside `atomic_updates` | 2.21 Keras 3 | (public methods: the patch applies to whatever class `type(optimizer.iterations)` is) |
| `Variable._value`, the underlying `tf.Variable` (assigned in `keras.src.backend.common.variables.Variable`) | 2.21 Keras 3 | every update keeps Keras's own read-add-assign: two PSS workers' concurrent steps may lose updates again (the optimizer's `iterations` lagging the steps run) |
| `keras.src.backend.common.stateless_scope.in_stateless_scope` (not public: `keras.StatelessScope` is, the check is not) | 2.21 Keras 3 | treated as "not in a stateless scope": inside a `keras.StatelessScope` an update would be assigned instead of recorded in the scope |

Not used on tf_keras or Keras 2.15, whose variables are `tf.Variable`s already.

Example:
    ```python
    with atomic_updates(type(model.optimizer.iterations)):
        coordinator.schedule(train_steps, args=(iterator,))
    ```
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator

from trainexec.internals import ASSIGNED, LINE_KERAS_3, Internal

__all__ = ["INTERNALS", "atomic_updates", "stateless_scope_check"]

_VARIABLE = "keras.src.backend.tensorflow.core.Variable"
_LOSES_UPDATES = ("Keras's own read-add-assign: concurrent PSS steps may lose updates "
                  "(optimizer iterations lag the steps run)")

INTERNALS = (
    Internal(owner=_VARIABLE, attribute="assign_add", lines=(LINE_KERAS_3,),
             when_missing="nothing is patched for it (a public method)"),
    Internal(owner=_VARIABLE, attribute="assign_sub", lines=(LINE_KERAS_3,),
             when_missing="nothing is patched for it (a public method)"),
    Internal(owner=_VARIABLE, attribute="_value", lines=(LINE_KERAS_3,),
             when_missing=_LOSES_UPDATES, kind=ASSIGNED),
    Internal(owner="keras.src.backend.common.stateless_scope",
             attribute="in_stateless_scope", lines=(LINE_KERAS_3,),
             when_missing="updates inside a keras.StatelessScope are assigned, not "
                          "recorded in the scope"),
)


@functools.cache  # looked up once, not at every scheduled call
def stateless_scope_check() -> Callable[[], bool]:
    """Keras 3's `in_stateless_scope`; a function saying no when Keras does not
    have it."""
    try:
        from keras.src.backend.common.stateless_scope import in_stateless_scope
    except ImportError:
        return lambda: False
    return in_stateless_scope


@contextlib.contextmanager
def atomic_updates(variable_type: type) -> Iterator[None]:
    """Within the block, `assign_add` and `assign_sub` of Keras 3 variables
    (`variable_type`, e.g. `type(optimizer.iterations)`) update their `tf.Variable`
    in one op (atomic on a ps) instead of reading, adding and assigning; the
    methods are put back after. A variable without a `tf.Variable` yet, and any
    variable inside a `keras.StatelessScope` (where Keras records the new value
    in the scope instead of assigning it), keep Keras's own update.

    The methods are patched on the class, so for the block's lifetime they apply
    to every variable of that type in the process: `DistributedFit` enters it only
    while it traces or schedules a ParameterServerStrategy step (the traced graph
    keeps the atomic ops), not while callbacks run.
    """
    import tensorflow as tf

    in_stateless_scope = stateless_scope_check()
    originals = {name: variable_type.__dict__.get(name)
                 for name in ("assign_add", "assign_sub")}

    def atomic(name: str, keras_update: Callable) -> Callable:
        def update(self: Any, value: Any) -> Any:
            variable = getattr(self, "_value", None)
            if not isinstance(variable, tf.Variable) or in_stateless_scope():
                return keras_update(self, value)
            return getattr(variable, name)(tf.cast(value, variable.dtype))
        return update

    for name in originals:
        setattr(variable_type, name, atomic(name, getattr(variable_type, name)))
    try:
        yield
    finally:
        for name, original in originals.items():
            if original is None:
                delattr(variable_type, name)
            else:
                setattr(variable_type, name, original)
