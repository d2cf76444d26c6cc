"""What trainexec reads of a Keras optimizer beyond its public API.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `keras.src.optimizers.base_optimizer.BaseOptimizer._learning_rate` (assigned) | 2.21 Keras 3 | `learning_rate_schedule` returns None: progress reports leave out the learning rate |
| `tf_keras.src.optimizers.optimizer._BaseOptimizer._learning_rate` (assigned) | 2.21 tf_keras | the same |
| `keras.src.optimizers.optimizer._BaseOptimizer._learning_rate` (Keras 2.15, assigned) | 2.15 | the same |
| `_built`, assigned by each tf_keras optimizer's `build` (checked on `tf_keras.src.optimizers.sgd.SGD` and `.adam.Adam`) | 2.21 tf_keras | `optimizer_built` says built: the optimizer's slots are not created before a restore, which then fills them when they are created (deferred restoration) |
| `_built`, the same in Keras 2.15 (`keras.src.optimizers.sgd.SGD`, `.adam.Adam`) | 2.15 | the same |

Keras 3 optimizers have a public `built`, read first. Note that a tf_keras / Keras 2.15
optimizer has no `_built` at all until its `build` runs, so before that `optimizer_built`
already says True and `trainexec.keras.training` does not build the slots early on those
lines (the deferred restoration above applies); kept as it was, said here so that it is
not mistaken for a working check. The public `learning_rate` of an
optimizer following a schedule is the current value, not the schedule, hence
`_learning_rate`.

Example:
    ```python
    schedule = learning_rate_schedule(model.optimizer)   # a LearningRateSchedule or None
    if not optimizer_built(model.optimizer):
        model.optimizer.build(model.trainable_variables)
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.internals import ASSIGNED, LINE_KERAS_3, LINE_TF_2_15, LINE_TF_KERAS, Internal

__all__ = ["INTERNALS", "learning_rate_schedule", "optimizer_built"]

_NO_RATE = "progress reports leave out the learning rate"
_BUILT = "the optimizer counts as built: its slots are created when a restore needs them"

INTERNALS = (
    Internal(owner="keras.src.optimizers.base_optimizer.BaseOptimizer",
             attribute="_learning_rate", lines=(LINE_KERAS_3,), when_missing=_NO_RATE,
             kind=ASSIGNED),
    Internal(owner="tf_keras.src.optimizers.optimizer._BaseOptimizer",
             attribute="_learning_rate", lines=(LINE_TF_KERAS,), when_missing=_NO_RATE,
             kind=ASSIGNED),
    Internal(owner="keras.src.optimizers.optimizer._BaseOptimizer",
             attribute="_learning_rate", lines=(LINE_TF_2_15,), when_missing=_NO_RATE,
             kind=ASSIGNED),
    *(Internal(owner=f"{package}.src.optimizers.{module}", attribute="_built",
               lines=(line,), when_missing=_BUILT, kind=ASSIGNED)
      for package, line in (("tf_keras", LINE_TF_KERAS), ("keras", LINE_TF_2_15))
      for module in ("sgd.SGD", "adam.Adam")),
)


def learning_rate_schedule(optimizer: Any) -> Any:
    """What the optimizer holds as its learning rate (a schedule, a variable or a
    number), or None."""
    return getattr(optimizer, "_learning_rate", None)


def optimizer_built(optimizer: Any) -> bool:
    """Whether the optimizer has created its variables (Keras 3 `built`, Keras 2
    `_built`); True when it says neither."""
    return bool(getattr(optimizer, "built", getattr(optimizer, "_built", True)))
