"""What trainexec reads of a Keras optimizer beyond its public API.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `keras.src.optimizers.base_optimizer.BaseOptimizer._learning_rate` (assigned) | 2.21 Keras 3 | `learning_rate_schedule` returns None: progress reports leave out the learning rate |
| `tf_keras.src.optimizers.optimizer._BaseOptimizer._learning_rate` (assigned) | 2.21 tf_keras | the same |
| `keras.src.optimizers.optimizer._BaseOptimizer._learning_rate` (Keras 2.15, assigned) | 2.15 | the same |

`optimizer_built` reads the public `built` of a Keras 3 optimizer. A tf_keras or Keras
2.15 optimizer has no public flag (its private `_built` appears only once `build` has
run, so reading it could never say "not built"): there `optimizer_built` says True and
the slots are created at the first step, a restore filling them then (deferred
restoration, which those optimizers support). The public `learning_rate` of an
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
)


def learning_rate_schedule(optimizer: Any) -> Any:
    """What the optimizer holds as its learning rate (a schedule, a variable or a
    number), or None."""
    return getattr(optimizer, "_learning_rate", None)


def optimizer_built(optimizer: Any) -> bool:
    """Whether the optimizer has created its variables (Keras 3's public `built`);
    True for an optimizer without the flag (tf_keras, Keras 2.15), which restores its
    slots when it creates them."""
    return bool(getattr(optimizer, "built", True))
