"""The loss core every head shares: example weights, a custom `loss_fn`, reduction.

* `example_weights`: the `weight_column` (a feature name or a
  `tf.feature_column.numeric_column`, its `normalizer_fn` applied) read from the
  features as float32 and shape-checked (`shapes.check_weights`); 1.0 without one.
* `check_loss_fn` / `call_loss_fn`: a `loss_fn(labels, logits[, features,
  loss_reduction])` is checked when the head is made and its result's shape when it
  runs (`[D0, ... DN, expected dimension]`).
* `reduce_loss`: the weighted per-example losses to one number: their sum, or
  (`sum_over_batch_size`, the default) their sum over the number of loss elements
  (not over the sum of weights), as tf.estimator's heads reduce them; regularization
  losses are added after.
"""

from __future__ import annotations

from typing import Any, Callable

from trainexec.estimator_engine.calls import fn_args
from trainexec.estimator_engine.heads.keys import LossReduction
from trainexec.estimator_engine.heads.shapes import check_weights

__all__ = ["call_loss_fn", "check_loss_fn", "example_weights", "reduce_loss",
           "regularized"]

_LOSS_FN_ARGS = ("labels", "logits", "features", "loss_reduction")


def check_loss_fn(loss_fn: Callable) -> None:
    """ValueError unless `loss_fn` takes `labels` and `logits`, and at most
    `features` and `loss_reduction` besides."""
    given = fn_args(loss_fn)
    for required in ("labels", "logits"):
        if required not in given:
            raise ValueError(f"loss_fn must contain argument: {required}. Given arguments: "
                             f"{given}. A head's loss_fn is loss_fn(labels, logits) and may "
                             "also take features and loss_reduction")
    unexpected = [name for name in given if name not in _LOSS_FN_ARGS]
    if unexpected:
        raise ValueError(f"loss_fn has unexpected args: {unexpected}. A head calls "
                         "loss_fn with labels, logits and, if it names them, features and "
                         "loss_reduction: remove the others (or give them defaults "
                         "through functools.partial)")


def call_loss_fn(loss_fn: Callable, labels: Any, logits: Any, features: Any,
                 expected_loss_dim: int = 1) -> Any:
    """`loss_fn`'s unreduced loss, checked to be `[D0, ... DN, expected_loss_dim]`."""
    import tensorflow as tf

    kwargs = {"features": features} if "features" in fn_args(loss_fn) else {}
    what = f"loss_fn must return Tensor of shape [D0, D1, ... DN, {expected_loss_dim}]. "
    fix = ("(one unreduced loss per example: the head weights and reduces it; "
           "do not reduce it in loss_fn)")
    with tf.compat.v1.name_scope("call_loss_fn"):
        loss = tf.convert_to_tensor(loss_fn(labels=labels, logits=logits, **kwargs))
        if tf.executing_eagerly():
            logits_shape = tuple(logits.shape.as_list())
            loss_shape = tuple(loss.shape.as_list())
            if loss_shape != logits_shape[:-1] + (expected_loss_dim,):
                raise ValueError(what, "logits_shape: ", logits_shape, "loss_shape: ",
                                 loss_shape, fix)
            return loss
        if (loss.shape.rank is not None and logits.shape.rank is not None
                and loss.shape.rank != logits.shape.rank):  # known now: said now
            raise ValueError(what, "logits_shape: ", logits.shape, "loss_shape: ",
                             loss.shape, fix)
        logits_shape = tf.shape(logits, name="logits_shape")
        expected = tf.concat([logits_shape[:-1], [expected_loss_dim]], axis=0,
                             name="expected_loss_shape")
        loss_shape = tf.shape(loss, name="loss_shape")
        fits = tf.cond(tf.equal(tf.size(loss_shape), tf.size(expected)),
                       lambda: tf.reduce_all(tf.equal(loss_shape, expected)),
                       lambda: tf.constant(False))
        check = tf.debugging.Assert(fits, [what, "logits_shape: ", logits_shape,
                                           "loss_shape: ", loss_shape, fix],
                                    name="check_loss_shape")
        with tf.control_dependencies([check]):
            return tf.identity(loss)


def _is_numeric_column(column: Any) -> bool:
    return any(cls.__name__ in ("NumericColumn", "_NumericColumn")
               for cls in type(column).__mro__)


def example_weights(features: Any, weight_column: Any, logits: Any,
                    per_logit: bool = False) -> Any:
    """The batch's example weights (float32, shape-checked), or 1.0 without a
    `weight_column`."""
    import tensorflow as tf

    if weight_column is None:
        return 1.0
    if isinstance(weight_column, str):
        key, normalizer = weight_column, None
    elif _is_numeric_column(weight_column):
        key, normalizer = weight_column.key, weight_column.normalizer_fn
    else:
        raise TypeError(f"Weight column must be either a string or NumericColumn. Given "
                        f"type: {type(weight_column)}. Give the name of the weights "
                        "feature, or tf.feature_column.numeric_column(name)")
    if not isinstance(features, dict) or key not in features:
        raise ValueError(
            f"Feature {key} is not in features dictionary. The head's weight_column reads "
            f"each example's weight from features[{key!r}], and the input_fn gave "
            f"{sorted(features) if isinstance(features, dict) else type(features).__name__}"
            ". Add the weights to the features, or drop weight_column")
    weights = features[key]
    if isinstance(weights, tf.SparseTensor):
        raise ValueError(f"The corresponding Tensor of numerical column must be a Tensor. "
                         f"SparseTensor is not supported. key: {key}. Give one weight per "
                         "example as a dense Tensor (tf.sparse.to_dense)")
    weights = tf.convert_to_tensor(weights)
    if normalizer is not None:
        weights = normalizer(weights)
    if not (weights.dtype.is_floating or weights.dtype.is_integer):
        raise ValueError(f"Weight column should be castable to float. Given dtype: "
                         f"{weights.dtype}. Feature {key!r} must hold numbers")
    weights = tf.cast(weights, tf.float32, name="weights")
    return check_weights(weights, logits, key, per_logit=per_logit)


def reduce_loss(unweighted: Any, weights: Any, reduction: str) -> Any:
    """The weighted losses reduced to a scalar (module doc)."""
    import tensorflow as tf

    from trainexec.estimator_engine.heads.metrics import align_weights

    with tf.compat.v1.name_scope("weighted_loss"):
        losses = tf.convert_to_tensor(unweighted)
        if not losses.dtype.is_floating:
            losses = tf.cast(losses, tf.float32)
        weights = align_weights(losses, tf.cast(tf.convert_to_tensor(weights), losses.dtype))
        weighted = losses * weights
        total = tf.reduce_sum(weighted)
        if reduction == LossReduction.SUM:
            return total
        return tf.math.divide_no_nan(total, tf.cast(tf.size(weighted), losses.dtype),
                                     name="value")


def regularized(loss: Any, regularization_losses: Any) -> Any:
    """`loss` plus the sum of `regularization_losses` (when given)."""
    import tensorflow as tf

    if regularization_losses is None:
        return loss
    return loss + tf.math.add_n(list(regularization_losses))
