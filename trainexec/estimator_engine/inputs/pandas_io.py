"""`pandas_input_fn`: an input_fn feeding a pandas DataFrame, as `tf.estimator.inputs` had it.

The features are a dict {column name: tensor} of `x`'s columns (its index left out);
the labels, if `y` is given, one tensor (`y` a Series) or a dict {column name: tensor}
(`y` a DataFrame, whose columns may share names with `x`'s). `y`'s index must be `x`'s.
Batching, epochs, shuffling and the end of the input are `feeding`'s (tf.estimator's);
`shuffle` must be given, True or False. `queue_capacity=None` sizes the shuffling
window to the data (4 times its rows when shuffling).

A copy of `x` and `y` is taken when the input_fn is made. Columns of numbers, booleans
and text (object or pandas' string dtype) are fed; other dtypes (categories, dates,
nullable integers) and missing text are refused naming the column and the fix.

pandas is imported when `pandas_input_fn` is called: `pip install pandas` where it is
missing.

Example:
    ```python
    from trainexec.estimator.inputs import pandas_input_fn

    input_fn = pandas_input_fn(frame[["age", "height"]], frame["label"], batch_size=64,
                               num_epochs=None, shuffle=True)
    ```
"""

from __future__ import annotations

import uuid
from typing import Any, Callable

import numpy as np

from trainexec.estimator_engine.inputs.feeding import (batches, check_feeding,
                                                       tensor_dtype, tensors_from)

__all__ = ["pandas_input_fn"]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as err:
        raise TypeError(f"pandas_input_fn should not be called without pandas installed "
                        f"({err}): pip install pandas") from None
    return pandas


def _column(pd: Any, frame: Any, name: Any, where: str) -> np.ndarray:
    """Column `name` of `frame` as a numpy array TensorFlow can hold."""
    series = frame[name]
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind != "O":
        values = series.to_numpy(copy=True)
    elif pd.api.types.infer_dtype(series, skipna=True) in ("string", "bytes", "empty"):
        if series.isna().any():
            raise ValueError(f"{where} column {name!r} has missing values, which "
                             "TensorFlow cannot feed as text: fill them first "
                             "(.fillna(''))")
        values = series.to_numpy(dtype=object, copy=True)
    else:
        raise TypeError(f"{where} column {name!r} has dtype {dtype} (holding "
                        f"{pd.api.types.infer_dtype(series, skipna=True)} values), which no "
                        "TensorFlow dtype holds: convert it first (e.g. .astype('float32'), "
                        ".astype(str), or .cat.codes for categories)")
    tensor_dtype(values, f"{where} column {name!r}")
    return values


def _unique_columns(frame: Any, where: str) -> list:
    names = list(frame.columns)
    twice = sorted({str(name) for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"{where} has more than one column named {', '.join(twice)}: each "
                         "column becomes one feature; rename them")
    return names


def pandas_input_fn(x: Any, y: Any = None, batch_size: int = 128,
                    num_epochs: int | None = 1, shuffle: bool | None = None,
                    queue_capacity: int | None = 1000, num_threads: int = 1,
                    target_column: str = "target") -> Callable[[], Any]:
    """An input_fn feeding DataFrame `x` (and `y`) in batches (module doc).

    Args:
      x: a pandas DataFrame: the features, one per column.
      y: a pandas Series or DataFrame with `x`'s index, or None: the labels.
      batch_size: rows per batch (the last batch of the input may have fewer).
      num_epochs: how often the rows are read; None: forever.
      shuffle: True to read rows in random order (training), False in order.
      queue_capacity: how many rows shuffling draws from; None: sized to the data.
      num_threads: readers; each reads `num_epochs` epochs (tf.estimator's behaviour).
      target_column: the name under which a Series `y` travels beside `x`'s columns; it
        must not be one of them (checked for a DataFrame `y` too, which keeps its own
        column names).

    Returns:
      A function of no arguments returning `(features, labels)`, or `features` when
      `y` is None, as tensors of the current graph.

    Raises:
      TypeError: pandas is not installed; `target_column` is not a string; `x` or `y`
        of another type; a column of a dtype TensorFlow cannot hold.
      ValueError: `shuffle` not given as a bool; `target_column` already a column of
        `x`; `x` and `y` with different indexes; a bad batch_size, num_epochs,
        queue_capacity or num_threads.
    """
    pd = _pandas()
    shuffled = check_feeding("pandas_input_fn", shuffle=shuffle, batch_size=batch_size,
                  num_epochs=num_epochs, queue_capacity=queue_capacity,
                  num_threads=num_threads, capacity_may_be_none=True)
    if not isinstance(target_column, str):
        raise TypeError(f"target_column must be a string type; got {target_column!r}: it "
                        "names a Series y among the features (a DataFrame y keeps its own "
                        "column names)")
    if not isinstance(x, pd.DataFrame):
        raise TypeError(f"pandas_input_fn: x must be a pandas DataFrame, got "
                        f"{type(x).__name__} (a Series s: s.to_frame())")
    feature_names = _unique_columns(x, "x")
    columns = {name: _column(pd, x, name, "x") for name in feature_names}
    labels: Any = None
    if y is not None:
        if not isinstance(y, (pd.Series, pd.DataFrame)):
            raise TypeError(f"pandas_input_fn: y must be a pandas Series or DataFrame (or "
                            f"None), got {type(y).__name__}")
        if target_column in x:  # a DataFrame y too, as tf.estimator checked
            raise ValueError(f"Cannot use name {target_column} for target column: "
                             f"DataFrame already has a column with that name: {x.columns}; "
                             "pass another target_column")
        if not np.array_equal(x.index, y.index):
            raise ValueError(f"Index for x and y are mismatched.\nIndex for x: {x.index}\n"
                             f"Index for y: {y.index}\nGive y the index of x (e.g. "
                             "y.set_axis(x.index), or reset_index(drop=True) on both)")
        if isinstance(y, pd.DataFrame):
            labels = {}
            for name in _unique_columns(y, "y"):
                key = name if name not in columns else f"{name}_{uuid.uuid4()}"
                columns[key] = _column(pd, y, name, "y")
                labels[name] = key
        else:
            columns[target_column] = _column(pd, y.to_frame(target_column), target_column,
                                             "y")
            labels = target_column
    if queue_capacity is None:
        queue_capacity = max(1, 4 * len(x) if shuffle else len(x))

    def input_fn() -> Any:
        dataset = batches(columns, batch_size=batch_size, num_epochs=num_epochs,
                          shuffle=shuffled, queue_capacity=queue_capacity,
                          num_threads=num_threads)

        def split(batch: dict) -> Any:
            features = {name: batch[name] for name in feature_names}
            if labels is None:
                return features
            if isinstance(labels, dict):
                return features, {name: batch[key] for name, key in labels.items()}
            return features, batch[labels]

        return tensors_from(dataset.map(split))

    return input_fn
