"""`numpy_input_fn`: an input_fn feeding NumPy arrays, as `tf.estimator.inputs` had it.

`x` is one array (the features are then that one tensor) or a dict of arrays (a dict of
tensors, one per key); `y`, if given, one array (a labels tensor) or a dict of arrays (a
dict of tensors). The input_fn returns `(features, labels)`, or the features alone
without `y`. Every array holds one example per row (its first dimension); the rest of
its shape is each example's. Batching, epochs, shuffling and the end of the input are
`feeding`'s (tf.estimator's); `shuffle` must be given, True or False.

Checked when the input_fn is made (tf.estimator checked most of this only when the
input_fn was called), each error in tf.estimator's words, then what to do: `x` of
another type (TypeError), an empty `x` or `y`, arrays of different lengths, a key in
both `x` and `y` (ValueError). `x` and `y` are not changed; the input_fn keeps their
arrays (not copies), so it reads what they hold when the Estimator runs.

Example:
    ```python
    from trainexec.estimator.inputs import numpy_input_fn

    train_input_fn = numpy_input_fn({"x": x_train}, y_train, batch_size=32,
                                    num_epochs=None, shuffle=True)
    estimator.train(train_input_fn, steps=1000)
    ```
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from trainexec.estimator_engine.inputs.feeding import (batches, check_feeding,
                                                       tensor_dtype, tensors_from)

__all__ = ["numpy_input_fn"]

_ONE_ARRAY = "__direct_np_input__"  # the key of a single-array `x` among the columns
_TARGET = "__target_key__"  # the key of a single-array `y`, made unique among x's keys


def _features(x: Any) -> dict:
    """`x`'s columns, sorted by key (tf.estimator's order)."""
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict: give numpy_input_fn a dict of "
                             "arrays, one per feature")
        return dict(sorted(x.items(), key=lambda item: item[0]))
    if isinstance(x, np.ndarray):
        if x.size == 0:
            raise ValueError(f"x cannot be an empty array (shape {x.shape}): give "
                             "numpy_input_fn one row per example")
        return {_ONE_ARRAY: x}
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}: give "
                    "numpy_input_fn a numpy array, or a dict of them (np.asarray(x) "
                    "turns a list into one)")


def _targets(y: Any, features: dict) -> tuple[dict, Any]:
    """`y`'s columns and their keys: a list of keys (a dict `y`), one key, or None."""
    if y is None:
        return {}, None
    if isinstance(y, dict):
        if not y:
            raise ValueError("y cannot be empty dict, use None instead: numpy_input_fn "
                             "without labels gives the features alone")
        targets = dict(sorted(y.items(), key=lambda item: item[0]))
        both = sorted(set(features) & set(targets))
        if both:
            raise ValueError(f"{len(both)} duplicate keys are found in both x and y: "
                             f"{both}; rename them in x or in y, each key names one tensor")
        return targets, list(targets)
    key = _TARGET
    while key in features:
        key += "_n"
    return {key: y}, key


def _check_lengths(x: Any, y: Any, columns: dict, feature_keys: list) -> None:
    for key, array in columns.items():
        if not isinstance(array, np.ndarray) or array.ndim == 0:
            where = "y" if key not in feature_keys else (
                "x" if key == _ONE_ARRAY else f"x[{key!r}]")
            raise TypeError(f"{where} must be a numpy array with one row per example, "
                            f"got {type(array).__name__}: wrap it in np.asarray")
        tensor_dtype(array, "x" if key == _ONE_ARRAY else f"the array of {key!r}")
    if len({len(array) for array in columns.values()}) == 1:
        return
    shapes_x = {key: columns[key].shape for key in feature_keys}
    shapes_y = (None if y is None else {k: v.shape for k, v in y.items()}
                if isinstance(y, dict) else y.shape)
    raise ValueError("Length of tensors in x and y is mismatched. All elements in x and y "
                     f"must have the same length.\nShapes in x: {shapes_x}\nShapes in y: "
                     f"{shapes_y}\nGive every array one row per example (the same first "
                     "dimension)")


def numpy_input_fn(x: Any, y: Any = None, batch_size: int = 128, num_epochs: int | None = 1,
                   shuffle: bool | None = None, queue_capacity: int = 1000,
                   num_threads: int = 1) -> Callable[[], Any]:
    """An input_fn feeding `x` (and `y`) in batches (module doc).

    Args:
      x: a numpy array, or a dict of them: the features.
      y: a numpy array, a dict of them, or None: the labels.
      batch_size: rows per batch (the last batch of the input may have fewer).
      num_epochs: how often the rows are read; None: forever.
      shuffle: True to read rows in random order (training), False in order.
      queue_capacity: how many rows shuffling draws from.
      num_threads: readers; each reads `num_epochs` epochs (tf.estimator's behaviour).

    Returns:
      A function of no arguments returning `(features, labels)`, or `features` when
      `y` is None, as tensors of the current graph.

    Raises:
      ValueError: `shuffle` not given as a bool, empty or mismatched arrays, a key in
        both `x` and `y`, a bad batch_size, num_epochs, queue_capacity or num_threads.
      TypeError: `x` is neither an array nor a dict.
    """
    shuffled = check_feeding("numpy_input_fn", shuffle=shuffle, batch_size=batch_size,
                  num_epochs=num_epochs, queue_capacity=queue_capacity,
                  num_threads=num_threads)
    features = _features(x)
    feature_keys = list(features)
    targets, target_keys = _targets(y, features)
    columns = {**features, **targets}
    _check_lengths(x, y, columns, feature_keys)

    def input_fn() -> Any:
        dataset = batches(columns, batch_size=batch_size, num_epochs=num_epochs,
                          shuffle=shuffled, queue_capacity=queue_capacity,
                          num_threads=num_threads)

        def split(batch: dict) -> Any:
            found = (batch[_ONE_ARRAY] if isinstance(x, np.ndarray)
                     else {key: batch[key] for key in feature_keys})
            if target_keys is None:
                return found
            if isinstance(target_keys, list):
                return found, {key: batch[key] for key in target_keys}
            return found, batch[target_keys]

        return tensors_from(dataset.map(split))

    return input_fn
