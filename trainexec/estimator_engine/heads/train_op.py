"""The training op of a head's TRAIN spec, and the loss summaries beside it.

Exactly one of `optimizer` and `train_op_fn`:

* a `tf.compat.v1.train.Optimizer`: `minimize(loss, var_list=trainable_variables,
  global_step=<the global step>)`, so the step advances (trainexec's addition:
  tf.estimator 2.15's heads refuse these);
* a Keras 2 optimizer (tf_keras, or Keras 2.15 on the 2.15 line) with `get_updates`,
  such as `tf.keras.optimizers.legacy.Adagrad`: `get_updates(loss,
  trainable_variables)[0]`, as tf.estimator does (`trainable_variables` required; the
  loss scaled by 1/replicas for `sum_over_batch_size`; the step advances only where the
  optimizer's `iterations` is the global step);
* a Keras 3 optimizer, or a Keras 2 one without `get_updates`: refused, naming the fix
  (a `tf.compat.v1.train` optimizer): it cannot update variables in the Estimator's
  graph;
* `train_op_fn(loss)`: whatever op it returns.

`update_ops` (e.g. batch normalization's) are grouped with the op. Everything is
built under the root name scope `training/`, as tf.estimator builds it.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from trainexec.estimator_engine.heads.keys import LossReduction, MetricKeys

__all__ = ["add_loss_summaries", "make_train_op"]

_LIST_ERR = "{} should be a list or a tuple. Given type: {}."
_V1_FIX = ("tf.compat.v1.train.AdagradOptimizer(0.05), or any tf.compat.v1.train "
           "optimizer")


def _keras_major(optimizer: Any) -> int | None:
    """2 or 3 for a Keras optimizer (tf_keras is 2), None for anything else."""
    for cls in type(optimizer).__mro__:
        root = cls.__module__.split(".")[0]
        if root == "tf_keras":
            return 2
        if root == "keras":
            version = str(getattr(sys.modules.get("keras"), "__version__", "3"))
            return int(version.split(".")[0])
    return None


def _check_variables(trainable_variables: Any, required: bool) -> None:
    if trainable_variables is None:
        if required:
            raise ValueError(
                f"trainable_variables cannot be None. Given {trainable_variables}. A Keras "
                "optimizer updates the variables it is given: pass "
                "trainable_variables=model.trainable_variables (or the list to train)")
        return
    if not isinstance(trainable_variables, (list, tuple)):
        raise ValueError(_LIST_ERR.format("trainable_variables", type(trainable_variables))
                         + " Give the variables to train as a list")


def _optimizer_step(optimizer: Any, loss: Any, trainable_variables: Any,
                    loss_reduction: str) -> Any:
    import tensorflow as tf

    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        _check_variables(trainable_variables, required=False)
        return optimizer.minimize(
            loss, global_step=tf.compat.v1.train.get_global_step(),
            var_list=list(trainable_variables) if trainable_variables is not None else None)
    major = _keras_major(optimizer)
    if major is None:
        raise ValueError(
            f"The given optimizer is not a tf.keras.optimizers.Optimizer instance. Received "
            f"optimizer of type {type(optimizer)}. A head trains with a "
            f"tf.compat.v1.train optimizer ({_V1_FIX}) or, under tf_keras, a "
            "tf.keras.optimizers.legacy optimizer")
    if major >= 3 or not callable(getattr(optimizer, "get_updates", None)):
        which = "Keras 3" if major >= 3 else "this Keras"
        raise ValueError(
            f"The given optimizer ({type(optimizer).__name__}) is a {which} optimizer, "
            "which cannot update variables in the Estimator's TensorFlow graph (it has no "
            f"get_updates). Give the head a tf.compat.v1.train optimizer instead: {_V1_FIX}"
            " (under tf_keras, a tf.keras.optimizers.legacy optimizer also works)")
    _check_variables(trainable_variables, required=True)
    if loss_reduction in (LossReduction.SUM_OVER_BATCH_SIZE, LossReduction.AUTO):
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        if replicas > 1:
            loss = loss * (1.0 / replicas)
    return optimizer.get_updates(loss, trainable_variables)[0]


def make_train_op(loss: Any, optimizer: Any = None, trainable_variables: Any = None,
                  train_op_fn: Callable | None = None, update_ops: Any = None,
                  loss_reduction: str = LossReduction.SUM_OVER_BATCH_SIZE) -> Any:
    """The op of one training step on the regularized `loss` (module doc)."""
    import tensorflow as tf

    if update_ops is not None and not isinstance(update_ops, (list, tuple)):
        raise ValueError(_LIST_ERR.format("update_ops", type(update_ops))
                         + " Give the update ops (e.g. batch normalization's) as a list")
    with tf.compat.v1.name_scope(""), tf.compat.v1.name_scope("training"):
        if optimizer is not None:
            if train_op_fn is not None:
                raise ValueError("train_op_fn and optimizer cannot both be set. Give the "
                                 "head one way to train: an optimizer, or train_op_fn")
            train_op = _optimizer_step(optimizer, loss, trainable_variables, loss_reduction)
        elif train_op_fn is not None:
            train_op = train_op_fn(loss)
        else:
            raise ValueError(
                "train_op_fn and optimizer cannot both be None. In TRAIN mode give the "
                f"head optimizer= ({_V1_FIX}) or train_op_fn=lambda loss: <the train op>")
        if update_ops is not None:
            train_op = tf.group(train_op, *update_ops)
    return train_op


def add_loss_summaries(loss: Any, regularization_losses: Any = None,
                       key: Callable[[str], str] = lambda name: name) -> None:
    """Scalar summaries of the training loss (and the regularization loss), under the
    head's metric keys (`loss/<head name>`)."""
    import tensorflow as tf

    with tf.compat.v1.name_scope(""):
        tf.compat.v1.summary.scalar(key(MetricKeys.LOSS), loss)
        if regularization_losses is not None:
            tf.compat.v1.summary.scalar(key(MetricKeys.LOSS_REGULARIZATION),
                                        tf.math.add_n(list(regularization_losses)))
