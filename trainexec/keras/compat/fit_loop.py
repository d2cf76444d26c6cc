"""What trainexec's own loop for `fit` borrows from Keras's.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `keras.src.trainers.trainer.Trainer._symbolic_build` (builds the compiled loss and metrics from a batch spec) | 2.21 Keras 3 | `DistributedFit` does not build them before the first step (what Keras 3's `fit` fails to do under MultiWorkerMirroredStrategy / ParameterServerStrategy, keras-team/keras#20585): training may then fail as `fit` does |
| `tf_keras.src.callbacks.Callback._supports_tf_logs` (assigned) | 2.21 tf_keras | trainexec's progress callback still sets it; `fit` then hands it numpy logs (each batch's values fetched: slower, and PSS refuses such batch-level callbacks) |
| `keras.src.callbacks.Callback._supports_tf_logs` (Keras 2.15, assigned) | 2.15 | the same |

On Keras 3 `_supports_tf_logs` is no Keras attribute: `DistributedFit` reads it as
tf_keras' `fit` does, and trainexec's progress callback sets it, so that it gets each
scheduled call's `RemoteValue` instead of waiting for its values.

Example:
    ```python
    build_compiled_state(model, element_spec)       # False where Keras cannot
    if takes_tf_logs(callback):
        callback.on_train_batch_end(batch, logs=remote_value)
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.internals import ASSIGNED, LINE_KERAS_3, LINE_TF_2_15, LINE_TF_KERAS, Internal

__all__ = ["INTERNALS", "build_compiled_state", "mark_takes_tf_logs", "takes_tf_logs"]

_NUMPY_LOGS = ("Keras fit hands trainexec's progress callback numpy logs: every batch's "
               "values are fetched")

INTERNALS = (
    Internal(owner="keras.src.trainers.trainer.Trainer", attribute="_symbolic_build",
             lines=(LINE_KERAS_3,),
             when_missing="DistributedFit does not build the compiled loss and metrics "
                          "before the first step, what Keras 3's fit fails to do under "
                          "MWMS / PSS: training may then fail as fit does"),
    Internal(owner="tf_keras.src.callbacks.Callback", attribute="_supports_tf_logs",
             lines=(LINE_TF_KERAS,), when_missing=_NUMPY_LOGS, kind=ASSIGNED),
    Internal(owner="keras.src.callbacks.Callback", attribute="_supports_tf_logs",
             lines=(LINE_TF_2_15,), when_missing=_NUMPY_LOGS, kind=ASSIGNED),
)


def build_compiled_state(model: Any, data_batch: Any) -> bool:
    """Keras 3's `model._symbolic_build(data_batch=...)` (call it in the strategy's
    scope); False, doing nothing, where the model has no such method."""
    build = getattr(model, "_symbolic_build", None)
    if build is None:
        return False
    build(data_batch=data_batch)
    return True


def takes_tf_logs(callback: Any) -> bool:
    """Whether `callback` accepts logs as TensorFlow values (Keras 2's flag)."""
    return bool(getattr(callback, "_supports_tf_logs", False))


def mark_takes_tf_logs(callback: Any) -> None:
    """Tells Keras 2's `fit` (and `DistributedFit`) that `callback` accepts logs as
    TensorFlow values."""
    callback._supports_tf_logs = True
