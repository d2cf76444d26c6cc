"""`add_metrics`: an Estimator like another, with more evaluation metrics.

The new Estimator calls the old one's `model_fn` and, in EVAL mode, adds what
`metric_fn` returns to its `eval_metric_ops` (a name already there is replaced).
`metric_fn` takes any of `features`, `labels`, `predictions` (the spec's) and `config`
by name, and returns metrics by name: `(value, update_op)` pairs, Keras metrics after
`update_state(...)`, or the heads' metric objects. The new Estimator shares the old
one's `model_dir`, `config` and warm start.

Example:
    ```python
    def my_auc(labels, predictions):
        auc = tf.compat.v1.metrics.auc(labels, predictions["logistic"])
        return {"my_auc": auc}

    estimator = add_metrics(estimator, my_auc)
    ```
"""

from __future__ import annotations

from typing import Any, Callable

from trainexec.estimator_engine.calls import fn_args

__all__ = ["add_metrics"]

_METRIC_FN_ARGS = ("features", "labels", "predictions", "config")


def add_metrics(estimator: Any, metric_fn: Callable) -> Any:
    """A new `Estimator`: `estimator` with the metrics of `metric_fn` (module doc).

    Args:
        estimator: the Estimator to extend.
        metric_fn: takes any of `features`, `labels`, `predictions`, `config`;
            returns a dict of metrics by name.

    Returns:
        A new `trainexec.estimator.Estimator` on the same `model_dir` and `config`.

    Raises:
        ValueError: when `metric_fn` takes another argument.
    """
    from trainexec.estimator_engine.estimator import Estimator
    from trainexec.estimator_engine.model_spec import EstimatorSpec, ModeKeys

    names = fn_args(metric_fn)
    unexpected = [name for name in names if name not in _METRIC_FN_ARGS]
    if unexpected:
        raise ValueError(f"metric_fn ({metric_fn}) has following not expected args: "
                         f"{unexpected}. metric_fn may take features, labels, predictions "
                         "and config, by those names")
    model_fn = estimator.model_fn

    def new_model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
        spec = model_fn(features, labels, mode, config)
        if mode != ModeKeys.EVAL:
            return spec
        given = {"features": features, "labels": labels, "predictions": spec.predictions,
                 "config": config}
        added = metric_fn(**{name: given[name] for name in names})
        return EstimatorSpec(
            mode, predictions=spec.predictions, loss=spec.loss, train_op=spec.train_op,
            eval_metric_ops={**(spec.eval_metric_ops or {}), **added},
            export_outputs=spec.export_outputs,
            training_chief_hooks=spec.training_chief_hooks,
            training_hooks=spec.training_hooks, scaffold=spec.scaffold,
            evaluation_hooks=spec.evaluation_hooks, prediction_hooks=spec.prediction_hooks)

    return Estimator(model_fn=new_model_fn, model_dir=estimator.model_dir,
                     config=estimator.config, warm_start_from=estimator._warm_start)
