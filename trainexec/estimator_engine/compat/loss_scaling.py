"""The loss scaling tf.estimator switched on for `tf.compat.v1` optimizers under a strategy.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `tf.distribute.Strategy._scale_loss_for_estimator_enabled` (defined on its base class; the context in which `tf.compat.v1.train.Optimizer` divides a mean-reduced loss by the replicas in sync) | 2.15, 2.21 Keras 3, 2.21 tf_keras | no scaling: with more than one replica in sync, each replica's gradient is summed, not averaged, and training differs from tf.estimator's |
| `Graph._is_loss_scaled_by_optimizer`, assigned by `tf.compat.v1.train.Optimizer` when it scaled the loss | 2.15, 2.21 Keras 3, 2.21 tf_keras | the loss logged and summarized is the replicas' sum, as for a loss no optimizer scaled |

tf.estimator trained a `model_fn` under a strategy in this context: a
`tf.compat.v1.train.Optimizer` then divides a loss the `model_fn` reduced by mean (any
`tf.compat.v1.losses` reduction but SUM) by the number of replicas in sync, so that the
all-reduced (summed) gradients are their mean, as one replica's on the whole batch. The
loss it reports is then the replicas' mean (`tf.compat.v1.distribute.get_loss_reduction()`,
public); for a loss no optimizer scaled, their sum. TensorFlow keeps both switches
private; `estimator_loss_scaling` and `reported_loss_reduction` are the engine's only
ways to them.

Example:
    ```python
    with strategy.scope(), estimator_loss_scaling(strategy):
        grouped = strategy.extended.call_for_each_replica(model_fn, args=...)
        loss = strategy.reduce(reported_loss_reduction(), grouped.loss, axis=None)
    ```
"""

from __future__ import annotations

import contextlib
from typing import Any, ContextManager

from trainexec.internals import ASSIGNED, LINES, Internal

__all__ = ["INTERNALS", "estimator_loss_scaling", "reported_loss_reduction"]

_SCALING = "_scale_loss_for_estimator_enabled"
_SCALED = "_is_loss_scaled_by_optimizer"

INTERNALS = (
    Internal(owner="tensorflow.distribute.Strategy",
             attribute=_SCALING, lines=LINES,
             when_missing="no loss scaling: with several replicas in sync the gradients "
                          "are summed, not averaged, unlike tf.estimator's"),
    Internal(owner="tensorflow.compat.v1.train.Optimizer", attribute=_SCALED,
             lines=LINES, kind=ASSIGNED,
             when_missing="the loss logged is the replicas' sum"),
)


def estimator_loss_scaling(strategy: Any) -> ContextManager[Any]:
    """The block builds a `model_fn` under `strategy` as tf.estimator built it: its
    `tf.compat.v1` optimizers scale a mean-reduced loss by the replicas in sync."""
    enabled = getattr(strategy, _SCALING, None)
    return enabled() if callable(enabled) else contextlib.nullcontext()


def reported_loss_reduction() -> Any:
    """How the replicas' losses of the graph being built are reduced for the log and the
    summaries: MEAN (or the last loss reduction's) where an optimizer scaled the loss,
    else SUM, as tf.estimator reduced them."""
    import tensorflow as tf

    if getattr(tf.compat.v1.get_default_graph(), _SCALED, False):
        return tf.compat.v1.distribute.get_loss_reduction()
    return tf.distribute.ReduceOp.SUM
