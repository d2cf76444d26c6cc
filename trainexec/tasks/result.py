"""`TrainResult`: what `trainexec.train_and_evaluate` returns, for every trainer.

One contract across trainers and roles, and tf.estimator's where they meet:

| this process | returns |
| --- | --- |
| a local run (no `TF_CONFIG`) that evaluated | `TrainResult(metrics, exports)` of its final evaluation |
| the evaluator task | `TrainResult(metrics, exports)` of the run's last checkpoint |
| chief, worker, master, ps | `None`, as tf.estimator returns there |
| a local run or an evaluator that evaluated no checkpoint | `None` |

A `TrainResult` is a `(metrics, exports)` pair, so tf.estimator's
`metrics, exports = train_and_evaluate(...)` of a local run keeps working; a program
that runs in every role reads it as

```python
result = trainexec.train_and_evaluate(trainer, train_spec, eval_spec)
if result is not None:  # a local run or the evaluator; None in the other roles
    print(result.metrics["accuracy"], result.exports)
```
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["TrainResult", "train_result"]


class TrainResult(NamedTuple):
    """The final evaluation this process ran (module doc).

    Attributes:
      metrics: the evaluation's metrics, `global_step` included.
      exports: what each exporter returned for it, in the EvalSpec's order (an
        Estimator's export paths are bytes, as tf.estimator's; a KerasTrainer's str).
    """

    metrics: dict[str, Any]
    exports: list[Any]


def train_result(metrics: dict | None, exports: list | None) -> TrainResult | None:
    """`TrainResult(metrics, exports)`, or None when nothing was evaluated."""
    if metrics is None:
        return None
    return TrainResult(dict(metrics), list(exports) if exports is not None else [])
