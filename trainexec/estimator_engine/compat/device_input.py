"""The per-device datasets a strategy's iterator feeds its replicas, made without tf.data's
autotuning thread.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `tensorflow.python.data.ops.multi_device_iterator_ops._create_device_dataset` (the function `MultiDeviceIterator` builds each device's dataset with: a generator over the host iterator, then a fixed prefetch) | 2.15, 2.21 Keras 3, 2.21 tf_keras | each device's iterator keeps its autotuning thread: a MultiWorkerMirroredStrategy chief's session close can wait for that thread's next tuning, up to 60 s |

Under a distribution strategy the Estimator engine reads its input through
`strategy.make_input_fn_iterator`, which in a graph is a `MultiDeviceIterator`: one
iterator over the `input_fn`'s dataset on the host, and one over a small dataset per
device that takes its elements from the host's. Every one of those iterators runs
tf.data's autotuning on a thread of its own, and when the session closes, destroying the
iterator waits for that thread, which is not woken then: it wakes at its next tuning,
and the period between tunings doubles up to 60 s. A MultiWorkerMirroredStrategy chief
so returned from training up to 42 s after its last step (the chaos row
`estimator-mwms` on `gs://`, about 1 run in 7; gdb: `RootDataset::Iterator::~Iterator`
waiting for `Model::OptimizeLoop` under `MasterSession::DeleteWorkerSessions`).

A device's dataset has nothing to tune (a generator and a prefetch of fixed size), and
no public API gives it options: `device_datasets_without_autotune` wraps TensorFlow's
function for the block, so that each device's dataset it makes is built with
`options.autotune.enabled = False`, and puts the function back after it (one block at a
time; a block within a block changes nothing more). The host dataset is the
`input_fn`'s, whose options are the user's (`input_fn.strategy_iterator`).

Example:
    ```python
    with device_datasets_without_autotune():
        iterator = strategy.make_input_fn_iterator(dataset_fn)
    ```
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from typing import Any, Iterator

from trainexec.internals import LINES, Internal

__all__ = ["INTERNALS", "autotune_off", "device_datasets_without_autotune"]

_OWNER = "tensorflow.python.data.ops.multi_device_iterator_ops"
_FUNCTION = "_create_device_dataset"

INTERNALS = (
    Internal(owner=_OWNER, attribute=_FUNCTION, lines=LINES,
             when_missing="each device's iterator keeps its autotuning thread: a "
                          "MultiWorkerMirroredStrategy chief's session close can wait "
                          "up to 60 s for it"),
)

# One block at a time swaps the module's function (re-entrant: an input_fn called inside
# the block may build another strategy's iterator; the inner block then changes nothing).
_LOCK = threading.RLock()
_WRAPPED = "_trainexec_without_autotune"


def autotune_off(dataset: Any) -> Any:
    """`dataset` with `options.autotune.enabled = False` (public tf.data API)."""
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


@contextlib.contextmanager
def device_datasets_without_autotune() -> Iterator[None]:
    """Within the block, each per-device dataset a `MultiDeviceIterator` builds has
    tf.data's autotuning off (module doc); outside it, TensorFlow's function is back."""
    module = importlib.import_module(_OWNER)
    with _LOCK:
        original = getattr(module, _FUNCTION, None)
        if original is None or getattr(original, _WRAPPED, False):
            yield
            return

        def without_autotune(*args: Any, **kwargs: Any) -> Any:
            return autotune_off(original(*args, **kwargs))

        setattr(without_autotune, _WRAPPED, True)
        setattr(module, _FUNCTION, without_autotune)
        try:
            yield
        finally:
            setattr(module, _FUNCTION, original)
