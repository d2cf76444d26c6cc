"""Keras 3's automatic layer names, counted afresh for each graph a `model_fn` builds.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `keras.src.backend.common.global_state.get_global_attribute`, `set_global_attribute` with the key `"object_name_uids"` (the counters `keras.src.utils.naming.uniquify` numbers automatic names with) | 2.21 Keras 3 | names are counted on across graphs: a model_fn of unnamed Keras layers trains, then its evaluation, prediction or export asks the checkpoint for other variable names (NotFoundError) |

Keras 3 numbers a layer created without a name per process and thread (`dense`,
`dense_1`, ...), and offers no public way to restart the count short of
`keras.backend.clear_session()`, which also drops the user's global settings and
resets TensorFlow's default graph. tf.estimator called a `model_fn` in a new graph for
each of train, evaluate, predict and export, and Keras 2 counted names per graph, so
every graph got the same names: `fresh_auto_names` gives Keras 3 fresh counters for
the block and puts the user's back after it. tf_keras and Keras 2.15 count per graph
already; nothing is done unless Keras 3 is loaded.

Example:
    ```python
    with tf.Graph().as_default(), fresh_auto_names():
        spec = model_fn(features, labels, mode)   # tf.keras.layers.Dense(10) -> "dense"
    ```
"""

from __future__ import annotations

import collections
import contextlib
import sys
from typing import Iterator

from trainexec.internals import LINE_KERAS_3, Internal

__all__ = ["INTERNALS", "UIDS_KEY", "fresh_auto_names"]

_STATE = "keras.src.backend.common.global_state"
UIDS_KEY = "object_name_uids"
_COUNTED_ON = ("automatic layer names are counted on across graphs: evaluating, "
               "predicting or exporting a model_fn of unnamed Keras 3 layers fails "
               "restoring the checkpoint (NotFoundError)")

INTERNALS = (
    Internal(owner=_STATE, attribute="get_global_attribute", lines=(LINE_KERAS_3,),
             when_missing=_COUNTED_ON),
    Internal(owner=_STATE, attribute="set_global_attribute", lines=(LINE_KERAS_3,),
             when_missing=_COUNTED_ON),
)


@contextlib.contextmanager
def fresh_auto_names() -> Iterator[None]:
    """Within the block, Keras 3 names unnamed layers as in a fresh process (`dense`,
    `dense_1`, ...); after it, the counts are as they were before (module doc)."""
    state = sys.modules.get(_STATE)
    if state is None or not all(hasattr(state, name) for name in
                                ("get_global_attribute", "set_global_attribute")):
        yield
        return
    before = state.get_global_attribute(UIDS_KEY)
    state.set_global_attribute(UIDS_KEY, collections.defaultdict(int))
    try:
        yield
    finally:
        state.set_global_attribute(UIDS_KEY, before)
