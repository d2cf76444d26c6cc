"""Keras `logs` values as a training loop's callbacks and History get them.

A training step returns its loss and metrics as tensors (or, under
ParameterServerStrategy, a `RemoteValue` of them). `fit` hands callbacks plain
values: a scalar as a Python float, a metric with several values (such as
`F1Score(average=None)`, one per class) as a NumPy array. `log_values` makes
those from any of them; `trainexec.keras.fit.distributed_fit` uses it for its logs,
`trainexec.keras.fit.progress` to pick the scalars it reports.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["log_values"]


def _fetched(value: Any) -> Any:
    """A ParameterServerStrategy `RemoteValue`'s value (waiting for it); else `value`."""
    return value.fetch() if callable(getattr(value, "fetch", None)) else value


def log_values(logs: Mapping[str, Any] | Any | None) -> dict[str, Any]:
    """`logs` with each number a float and each multi-valued metric a NumPy array.

    `logs` may be a `RemoteValue` of the whole dict; a nested dict (a metric
    whose result is a dict) is flattened into its entries; a value that is not
    numeric is kept as it is.
    """
    import numpy as np

    values: dict[str, Any] = {}
    for name, value in (_fetched(logs) or {}).items():
        value = _fetched(value)
        if isinstance(value, Mapping):
            values.update(log_values(value))
            continue
        try:
            array = np.asarray(value)
        except Exception:  # something a callback put there that is not a number
            values[str(name)] = value
            continue
        if array.dtype.kind not in "fiub":
            values[str(name)] = value
        elif array.ndim == 0:
            values[str(name)] = float(array)
        else:
            values[str(name)] = array
    return values
