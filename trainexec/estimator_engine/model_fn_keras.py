"""What the Keras inside a `model_fn` sees while the engine builds a graph.

`keras_scope()` wraps every `model_fn` call (`graph.build_graph`: train, evaluate,
predict and export alike):

* the same variable names in every graph: a `model_fn` of unnamed `tf.keras.layers`
  (`tf.keras.layers.Dense(10)(features)`, as TensorFlow's r1 models wrote them) gets
  `dense/kernel`, `dense_1/kernel`, ... each time it is called. Keras 3 numbers such
  names per process, so the evaluation graph built after training would ask the
  checkpoint for `dense_2/kernel`; its counters start afresh for each call instead
  (`compat.keras_names`). tf_keras and Keras 2.15 count per graph: their names are
  untouched;
* a `model_fn` written for Keras 2 that fails under Keras 3 on a name Keras 3 lacks
  (`tf.compat.v1.layers.dense`: "`dense` is not available with Keras 3";
  `tf.keras.layers.DenseFeatures`) raises the same AttributeError, saying how to run
  it: `TF_USE_LEGACY_KERAS=1` with tf_keras installed.

Example:
    ```python
    with keras_scope():
        spec = call_model_fn(model_fn, features, labels, mode, params, config)
    ```
"""

from __future__ import annotations

import contextlib
import re
import sys
from typing import Iterator

from trainexec.estimator_engine.compat.keras_names import fresh_auto_names

__all__ = ["KERAS_2_HINT", "keras_2_hint", "keras_scope"]

KERAS_2_HINT = ("This model_fn uses Keras 2 (tf.compat.v1.layers, DenseFeatures, ...), "
                "which tf.keras here (Keras 3) does not have. Run it on Keras 2: install "
                "tf_keras (pip install \"trainexec[tf-keras]\") and set "
                "TF_USE_LEGACY_KERAS=1 before TensorFlow is imported; or rewrite it with "
                "Keras 3 layers (tf.keras.layers.Dense, ...)")

# TensorFlow's own refusal of a tf.compat.v1.layers name under Keras 3.
_NOT_WITH_KERAS_3 = "is not available with Keras 3"
# Keras 2 names an Estimator model_fn used that Keras 3's modules do not have.
_KERAS_2_ONLY = frozenset({"DenseFeatures", "SequenceFeatures", "LinearModel",
                           "WideDeepModel"})
_MISSING_IN_KERAS = re.compile(r"module '(?:tf_)?keras[\w.]*' has no attribute '(\w+)'")


def _keras_3_loaded() -> bool:
    keras = sys.modules.get("keras")
    return str(getattr(keras, "__version__", "")).startswith("3.")


def keras_2_hint(error: BaseException) -> str | None:
    """`KERAS_2_HINT` when `error` is Keras 3 refusing a Keras 2 name, else None."""
    if not isinstance(error, AttributeError):
        return None
    message = str(error)
    if _NOT_WITH_KERAS_3 in message:
        return KERAS_2_HINT
    found = _MISSING_IN_KERAS.search(message)
    if found and found.group(1) in _KERAS_2_ONLY and _keras_3_loaded():
        return KERAS_2_HINT
    return None


@contextlib.contextmanager
def keras_scope() -> Iterator[None]:
    """The block calls a model_fn: Keras 3's automatic names start afresh, and a Keras 2
    name Keras 3 lacks fails with how to run it (module doc)."""
    with fresh_auto_names():
        try:
            yield
        except AttributeError as err:
            hint = keras_2_hint(err)
            if hint is None or hint in str(err):
                raise
            raise AttributeError(f"{err} {hint}") from err
