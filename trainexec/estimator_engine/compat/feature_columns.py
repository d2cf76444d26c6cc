"""How a canned estimator tells a TensorFlow v1 feature column from a v2 one.

| what is read | seen on | when it no longer holds |
| --- | --- | --- |
| the column's class: defined in TensorFlow (its `__module__`'s top-level package is `tensorflow`), named `...Column`, without the public `parse_example_spec` of every v2 column (the v1 classes are `_NumericColumn`, `_SharedEmbeddingColumn`, ...: their protocol is underscored; no attribute, so not checked by the inventory test: tests/test_estimator_engine_compat_feature_columns.py checks it on runs 1 and 3) | 2.15, 2.21 (Keras plays no part) | a v1 column is refused as a column of the wrong kind ("Items of feature_columns must be ..."), not in tf.estimator's words |

tf.estimator's v2 canned estimators refuse a v1 column ("Received a feature column from
TensorFlow v1"; its own tests match the words). No public name of TensorFlow tells the
two apart, and no private attribute is read for it: only the public facts of the
column's class above (`tf.compat.v1.feature_column.shared_embedding_columns` still makes
v1 columns on every line). A subclass of a v1 column defined outside TensorFlow is
refused as a column of the wrong kind. `INTERNALS` is empty.

Example:
    ```python
    if is_v1_feature_column(column):
        raise ValueError("Received a feature column from TensorFlow v1 ...")
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.internals import Internal

__all__ = ["INTERNALS", "is_v1_feature_column"]

INTERNALS: tuple[Internal, ...] = ()


def is_v1_feature_column(column: Any) -> bool:
    """A TensorFlow v1 feature column: a column class of TensorFlow's without the public
    `parse_example_spec` every v2 column class has."""
    kind = type(column)
    return (kind.__module__.split(".")[0] == "tensorflow"
            and kind.__name__.endswith("Column")
            and not hasattr(kind, "parse_example_spec"))
