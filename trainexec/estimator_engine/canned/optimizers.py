"""A canned estimator's optimizer, given as tf.estimator takes it: a name, an
instance, or a callable returning one; and the step that applies it.

By name (`'Adagrad'`, `'Adam'`, `'Ftrl'`, `'RMSProp'`, `'SGD'`), the optimizer is the
one tf.estimator 2.15 used where Keras 2's optimizers exist (`tf.keras.optimizers.
legacy` under Keras 2, or `tf_keras.optimizers.legacy` when `tf_keras` is installed,
under Keras 3 too): the same update, the same variable names
(`training/Adagrad/<variable>/accumulator`, `training/Adagrad/learning_rate`, ...), so
checkpoints cross lines. Without Keras 2 it is the `tf.compat.v1.train` optimizer with
Keras's defaults (epsilon, initial accumulator): it trains the same model, but its slots
are named `<variable>/Adagrad` and it keeps no hyperparameter variables, so such a
checkpoint does not resume on another line (it evaluates and predicts there).

A `tf.compat.v1.train.Optimizer` or a Keras 2 optimizer instance is used as given; a
Keras 3 optimizer is refused when training starts (it cannot update variables in a v1
graph), naming the fix.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["OPTIMIZER_NAMES", "apply_updates", "check_optimizer", "get_optimizer",
           "keras2_optimizers", "own_global_step"]

OPTIMIZER_NAMES = ("Adagrad", "Adam", "Ftrl", "RMSProp", "SGD")
_KERAS_CLASS = {"Adagrad": "Adagrad", "Adam": "Adam", "Ftrl": "Ftrl",
                "RMSProp": "RMSprop", "SGD": "SGD"}
_KERAS_DEFAULT_LR = {"Adagrad": 0.001, "Adam": 0.001, "Ftrl": 0.001, "RMSProp": 0.001,
                     "SGD": 0.01}


def _unsupported(name: Any) -> ValueError:
    return ValueError(f"Unsupported optimizer name: {name}. Supported names are: "
                      f"{tuple(sorted(OPTIMIZER_NAMES))}")


def check_optimizer(optimizer: Any, argument: str = "optimizer") -> Any:
    """`optimizer` when it can be one (a known name, an instance or a callable);
    ValueError for an unknown name, before anything is built."""
    if isinstance(optimizer, str):
        if optimizer not in OPTIMIZER_NAMES:
            raise _unsupported(optimizer)
    elif optimizer is None:
        raise ValueError(f"{argument} must be an optimizer name "
                         f"({', '.join(OPTIMIZER_NAMES)}), an optimizer or a callable "
                         "returning one, given: None")
    return optimizer


def keras2_optimizers() -> Any:
    """The module of Keras 2's optimizers (`tf.keras.optimizers.legacy` under Keras 2,
    else `tf_keras.optimizers.legacy`), or None where there is none."""
    import tensorflow as tf

    keras_version = str(getattr(tf.keras, "__version__", None)
                        or getattr(sys.modules.get("keras"), "__version__", "3"))
    if keras_version.startswith("2."):
        return tf.keras.optimizers.legacy
    try:
        import tf_keras
    except ImportError:
        return None
    return tf_keras.optimizers.legacy


def _v1_optimizer(name: str, learning_rate: float) -> Any:
    import tensorflow as tf

    train = tf.compat.v1.train
    if name == "Adagrad":
        return train.AdagradOptimizer(learning_rate, initial_accumulator_value=0.1)
    if name == "Adam":
        return train.AdamOptimizer(learning_rate, epsilon=1e-7)
    if name == "Ftrl":
        return train.FtrlOptimizer(learning_rate, initial_accumulator_value=0.1)
    if name == "RMSProp":
        return train.RMSPropOptimizer(learning_rate, decay=0.9, epsilon=1e-7)
    return train.GradientDescentOptimizer(learning_rate)


def get_optimizer(optimizer: Any, learning_rate: float | None = None) -> Any:
    """The optimizer instance for `optimizer` (module doc). A name takes
    `learning_rate`, or the Keras optimizer's default when it is None."""
    if isinstance(optimizer, str):
        if optimizer not in OPTIMIZER_NAMES:
            raise _unsupported(optimizer)
        keras2 = keras2_optimizers()
        if keras2 is not None:
            cls = getattr(keras2, _KERAS_CLASS[optimizer])
            return cls(learning_rate=learning_rate) if learning_rate else cls()
        return _v1_optimizer(optimizer, learning_rate or _KERAS_DEFAULT_LR[optimizer])
    if callable(optimizer):
        optimizer = optimizer()
    return optimizer


def _is_v1(optimizer: Any) -> bool:
    import tensorflow as tf

    return isinstance(optimizer, tf.compat.v1.train.Optimizer)


def own_global_step(optimizer: Any) -> None:
    """Make a Keras 2 optimizer count its steps in the global step (as tf.estimator
    does, so hooks see the step advance); nothing for a v1 optimizer."""
    import tensorflow as tf

    if not _is_v1(optimizer) and callable(getattr(optimizer, "get_updates", None)):
        # (not hasattr(optimizer, "iterations"): reading it creates the variable)
        optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()


def apply_updates(optimizer: Any, loss: Any, variables: list, advances_step: bool) -> Any:
    """The op applying one step of `optimizer` to `variables`; it advances the global
    step when `advances_step` (a Keras 2 optimizer through `own_global_step`, called
    before)."""
    import tensorflow as tf

    if _is_v1(optimizer):
        step = tf.compat.v1.train.get_global_step() if advances_step else None
        return optimizer.minimize(loss, global_step=step, var_list=variables)
    if not callable(getattr(optimizer, "get_updates", None)):
        raise ValueError(
            f"The given optimizer ({type(optimizer).__name__}) cannot update variables in "
            "the Estimator's TensorFlow graph (it has no get_updates: a Keras 3 "
            "optimizer?). Give a name ('Adagrad', ...), a tf.compat.v1.train optimizer "
            "or, under tf_keras, a tf.keras.optimizers.legacy optimizer")
    return optimizer.get_updates(loss, variables)[0]

