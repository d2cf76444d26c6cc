"""How a canned estimator tells a TensorFlow v1 feature column from a v2 one.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `tensorflow.python.feature_column.feature_column._FeatureColumn._parse_example_spec` (the v1 columns' protocol: their methods are underscored) | 2.15, 2.21 Keras 3, 2.21 tf_keras | a v1 column is refused as a column of the wrong kind ("Items of feature_columns must be ..."), not in tf.estimator's words |

tf.estimator's v2 canned estimators refuse a v1 column ("Received a feature column from
TensorFlow v1"; its own tests match the words). A v2 column has the public
`parse_example_spec`; a v1 column only the underscored one, which no public name of
TensorFlow tells apart.

Example:
    ```python
    if is_v1_feature_column(column):
        raise ValueError("Received a feature column from TensorFlow v1 ...")
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.internals import LINES, Internal

__all__ = ["INTERNALS", "is_v1_feature_column"]

_V1_SPEC = "_parse_example_spec"

INTERNALS = (
    Internal(owner="tensorflow.python.feature_column.feature_column._FeatureColumn",
             attribute=_V1_SPEC, lines=LINES,
             when_missing="a v1 feature column is refused as one of the wrong kind, not "
                          "in tf.estimator's words"),
)


def is_v1_feature_column(column: Any) -> bool:
    """A TensorFlow v1 feature column, which no v2 column class also is (they have the
    public `parse_example_spec`)."""
    kind = type(column)
    return hasattr(kind, _V1_SPEC) and not hasattr(kind, "parse_example_spec")
