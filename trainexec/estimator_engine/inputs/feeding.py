"""Columns of in-memory arrays fed to a graph in batches, as tf.estimator's queues fed them.

tf.estimator's `numpy_input_fn` and `pandas_input_fn` pushed rows into a queue from
Python threads and dequeued batches of up to `batch_size`. Here the same stream is a
`tf.data` pipeline over row numbers (the arrays stay in Python, never in the graph, as
with the queues' feeding), whose observable behaviour is the queues':

* the rows in order, epoch after epoch, batches running across an epoch's end
  (3 rows, `batch_size=2`, 3 epochs: rows 0 1 | 2 0 | 1 2 | 0 1 | 2);
* with `num_epochs`, a last batch that may be short, then `OutOfRangeError` (which ends
  `train`, `evaluate` and `predict`); `num_epochs=0` ends at once; with
  `num_epochs=None`, batches of exactly `batch_size` (a static batch dimension), forever;
* `shuffle=True` draws rows at random from a window of `queue_capacity` rows of that
  stream (the queue's random dequeue); the order follows the graph's seed (the
  RunConfig's `tf_random_seed`), so a seeded Estimator shuffles the same way every run
  (the queues' threads made it vary);
* `num_threads` readers each read `num_epochs` epochs (tf.estimator's warning, kept:
  more epochs than one probably meant).

`tensors_from(dataset)` gives the batch tensors an input_fn returns (a one-shot
iterator: a plain `tf.compat.v1.Session` reads them with no initializer, as it read the
queues); `dataset_behind(result)` hands the Estimator engine the dataset behind such
tensors, which it reads with an iterator it can rewind (one evaluation graph for every
checkpoint).

Example:
    ```python
    dataset = batches({"x": x, "y": y}, batch_size=32, num_epochs=1, shuffle=False,
                      queue_capacity=1000, num_threads=1)
    element = tensors_from(dataset.map(lambda c: ({"x": c["x"]}, c["y"])))
    ```
"""

from __future__ import annotations

import logging
import numbers
import weakref
from typing import Any, Mapping, NamedTuple

import numpy as np

__all__ = ["ArrayInput", "batches", "check_feeding", "dataset_behind", "tensor_dtype",
           "tensors_from"]

logger = logging.getLogger(__name__)

# {graph: [ArrayInput, ...]}: what `dataset_behind` looks up (not a graph collection,
# which a checkpoint's meta graph would try, and fail, to write).
_MADE: "weakref.WeakKeyDictionary[Any, list]" = weakref.WeakKeyDictionary()

_SHUFFLE_WORDS = ("shuffle must be provided and explicitly set as boolean (it is "
                  "recommended to set it as True for training); got {}")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_feeding(who: str, *, shuffle: Any, batch_size: Any, num_epochs: Any,
                  queue_capacity: Any, num_threads: Any,
                  capacity_may_be_none: bool = False) -> bool:
    """ValueError naming the argument of `who` (`numpy_input_fn`, `pandas_input_fn`)
    that is wrong, its value and the fix; `shuffle`'s in tf.estimator's words first.
    Returns `shuffle`, now known to be a bool."""
    if not isinstance(shuffle, bool):
        raise ValueError(f"{_SHUFFLE_WORDS.format(shuffle)}: call {who}(..., shuffle=True) "
                         "for training, shuffle=False to read the rows in order "
                         "(evaluation, prediction)")
    problems = []
    if not _is_int(batch_size) or batch_size <= 0:
        problems.append(f"batch_size must be an integer > 0, got {batch_size!r}")
    if num_epochs is not None and (not _is_int(num_epochs) or num_epochs < 0):
        problems.append(f"num_epochs must be an integer >= 0, or None to repeat the data "
                        f"forever, got {num_epochs!r}")
    if not (queue_capacity is None and capacity_may_be_none) and \
            (not _is_int(queue_capacity) or queue_capacity <= 0):
        allowed = " (or None: sized to the data)" if capacity_may_be_none else ""
        problems.append(f"queue_capacity must be an integer > 0{allowed}, got "
                        f"{queue_capacity!r}")
    if not _is_int(num_threads) or num_threads <= 0:
        problems.append(f"num_threads must be an integer > 0 (1 reads the rows in order), "
                        f"got {num_threads!r}")
    if problems:
        raise ValueError(f"{who}: {'; '.join(problems)}")
    return shuffle


def tensor_dtype(array: np.ndarray, where: str) -> Any:
    """The TensorFlow dtype holding `array`'s values (text and objects: tf.string);
    TypeError naming `where` (the column) when there is none."""
    import tensorflow as tf

    try:
        return tf.as_dtype(array.dtype)
    except TypeError:
        raise TypeError(f"{where} has dtype {array.dtype}, which no TensorFlow dtype holds: "
                        "convert it first (e.g. to numbers, or to text with "
                        ".astype(str))") from None


def _warn_threads(num_threads: int, num_epochs: int | None, shuffle: bool) -> None:
    if num_threads > 1 and num_epochs is not None:
        logger.warning("num_threads=%d with num_epochs=%d: each of the %d readers reads "
                       "num_epochs epochs (as tf.estimator's did), so the input gives %d "
                       "epochs; use num_threads=1 to limit epochs", num_threads, num_epochs,
                       num_threads, num_threads * num_epochs)
    if not shuffle and num_threads > 1:
        logger.warning("num_threads=%d with shuffle=False: every reader reads the rows in "
                       "order; to read the examples in order once, use one thread",
                       num_threads)


def batches(columns: Mapping[Any, np.ndarray], *, batch_size: int, num_epochs: int | None,
            shuffle: bool, queue_capacity: int, num_threads: int) -> Any:
    """A `tf.data.Dataset` of dicts {key: a batch of that column's rows} (module doc).
    Every column has the same number of rows (the caller checked)."""
    import tensorflow as tf

    keys = list(columns)
    arrays = [columns[key] for key in keys]
    dtypes = [tensor_dtype(array, f"column {key!r}") for key, array in zip(keys, arrays)]
    rows = len(arrays[0])
    _warn_threads(num_threads, num_epochs, shuffle)

    def take(indices: np.ndarray) -> list:
        return [array[indices] for array in arrays]

    static_batch = batch_size if num_epochs is None else None

    def gather(indices: Any) -> dict:
        values = tf.numpy_function(take, [indices], dtypes, stateful=False,
                                   name="feed_rows")
        for value, array in zip(values, arrays):
            value.set_shape([static_batch, *array.shape[1:]])
        return dict(zip(keys, values))

    epochs = None if num_epochs is None else num_epochs * num_threads
    stream = tf.data.Dataset.range(rows).repeat(epochs)
    if shuffle:
        stream = stream.shuffle(queue_capacity)
    stream = stream.batch(batch_size, drop_remainder=num_epochs is None)
    return stream.map(gather).prefetch(1)


class ArrayInput(NamedTuple):
    """An input_fn's tensors (`element`, as returned) and the dataset they come from."""

    element: Any
    dataset: Any


def tensors_from(dataset: Any) -> Any:
    """`dataset`'s next element as tensors of the current graph, read through a one-shot
    iterator; recorded with the graph for `dataset_behind`."""
    import tensorflow as tf

    element = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    _MADE.setdefault(tf.compat.v1.get_default_graph(), []).append(
        ArrayInput(element, dataset))
    return element


def dataset_behind(result: Any) -> Any:
    """The dataset whose one-shot tensors `result` is (an input_fn's return value, as
    `tensors_from` gave them, in the same structure), or None. None as well when an
    op reads those tensors already (an input_fn that went on computing with them):
    their own iterator must then stay the one read."""
    import tensorflow as tf

    records = _MADE.get(tf.compat.v1.get_default_graph(), ())
    returned = tf.nest.flatten(result) if records else ()
    for record in records:
        try:
            tf.nest.assert_same_structure(record.element, result, check_types=False)
        except (TypeError, ValueError):
            continue
        made = tf.nest.flatten(record.element)
        if len(made) == len(returned) and all(a is b for a, b in zip(made, returned)):
            if any(tensor.consumers() for tensor in made):
                return None
            return record.dataset
    return None
