"""Keras `Metric` objects in `eval_metric_ops`, as tf.estimator 2.x takes them.

A `model_fn` may give `eval_metric_ops={"mean": metric}` where `metric` is a Keras
`Metric` (tf_keras, Keras 2.15 or Keras 3 on the TensorFlow backend) on which it called
`update_state(...)` in the graph being built. `metric_pair` turns it into the
`(value, update_op)` pair the evaluation runs: the update is the op `update_state`
added (Keras 2 keeps it in `metric.updates`; Keras 3 keeps none, so the update is every
write to the metric's variables in the graph other than their initializers), the
value is `metric.result()`. The metric's variables go to the graph's
`LOCAL_VARIABLES` and `METRIC_VARIABLES` collections and out of `GLOBAL_VARIABLES`
(where Keras 3 puts them): each evaluation initializes them afresh (a reset), and no
checkpoint saves or expects them.

A Keras 3 metric whose variables are not TensorFlow variables (a JAX or PyTorch
backend) cannot run in the Estimator's graph: `metric_pair` refuses it at once,
naming the ways out.

The heads' own metric objects (`heads.metrics`: Keras 2's bookkeeping, `variables`,
`updates` and `result()`, on plain TensorFlow) are taken the same way
(`is_metric_object`).

Nothing here imports Keras: a metric is recognized by its class's ancestry.

Example:
    ```python
    mean = tf.keras.metrics.Mean()
    mean.update_state(loss)
    value, update_op = metric_pair("mean", mean)
    ```
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_keras_metric", "is_metric_object", "metric_pair"]

_KERAS_PACKAGES = ("keras", "tf_keras")
# The ops that write a resource variable; an update_state adds some of these.
_WRITES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")

_NOT_TENSORFLOW = (
    "cannot run in the Estimator's TensorFlow graph: its variables are {kind}, not "
    "TensorFlow variables. Run Keras on the TensorFlow backend (KERAS_BACKEND=tensorflow), "
    "or use tf_keras (pip install tf_keras; TF_USE_LEGACY_KERAS=1), or give a "
    "tf.compat.v1.metrics pair such as tf.compat.v1.metrics.mean(values)")


def is_keras_metric(value: Any) -> bool:
    """Whether `value` is a Keras `Metric` (tf_keras, Keras 2.15 or Keras 3)."""
    return any(cls.__name__ == "Metric" and cls.__module__.split(".")[0] in _KERAS_PACKAGES
               for cls in type(value).__mro__)


def is_metric_object(value: Any) -> bool:
    """Whether `value` is a Keras `Metric` or one of the heads' metric objects."""
    return is_keras_metric(value) or any(
        cls.__name__ == "Metric" and cls.__module__ == _HEAD_METRICS
        for cls in type(value).__mro__)


_HEAD_METRICS = "trainexec.estimator_engine.heads.metrics"


def metric_pair(key: str, metric: Any) -> tuple[Any, Any]:
    """`(metric.result(), update_op)` of a Keras metric updated in the default graph,
    its variables moved to the local and metric collections (module doc).

    Raises ValueError, with tf.estimator's words, when `update_state` was never
    called or the metric belongs to another graph; TypeError for a Keras 3 metric
    on a backend other than TensorFlow."""
    import tensorflow as tf

    variables = [_tf_variable(key, metric, v) for v in metric.variables]
    updates = list(getattr(metric, "updates", None) or ())  # Keras 2 records them
    if not hasattr(metric, "updates"):
        updates = _writes(variables)
    if not updates:
        raise ValueError(
            f'Please call update_state(...) on the "{metric.name}" metric: '
            f"EstimatorSpec `eval_metric_ops[{key!r}]` is a Keras metric that was never "
            "updated in this graph. Call metric.update_state(labels, predictions) (or "
            "update_state(values)) in the model_fn before returning it")
    graph = tf.compat.v1.get_default_graph()
    for op in (updates[0], *variables):
        if not tf.executing_eagerly() and _graph_of(op) is not graph:
            raise ValueError(
                f"eval_metric_ops with {key!r} must be from the default graph: the Keras "
                f'metric "{metric.name}" was created or updated in another graph (or '
                "eagerly). Create the metric and call update_state inside the model_fn")
    update = updates[0] if len(updates) == 1 else tf.group(*updates)
    _into_collections(variables)
    return metric.result(), update


def _tf_variable(key: str, metric: Any, variable: Any) -> Any:
    """The `tf.Variable` holding a metric variable (Keras 3 wraps one in `.value`)."""
    import tensorflow as tf

    if isinstance(variable, tf.Variable):
        return variable
    inner = getattr(variable, "value", None)
    if isinstance(inner, tf.Variable):
        return inner
    kind = type(inner if inner is not None else variable).__module__.split(".")[0]
    raise TypeError(f"EstimatorSpec `eval_metric_ops[{key!r}]`: the Keras metric "
                    f'"{metric.name}" ' + _NOT_TENSORFLOW.format(kind=f"{kind} arrays"))


def _graph_of(item: Any) -> Any:
    try:
        return item.graph
    except (AttributeError, RuntimeError):  # an eager variable has no graph
        return None


def _writes(variables: list) -> list:
    """The ops of the variables' graph writing them, their initializers left out."""
    if not variables:
        return []
    graph = _graph_of(variables[0])
    if graph is None:
        return []
    handles = {v.handle.op for v in variables}
    initializers = {v.initializer for v in variables}
    return [op for op in graph.get_operations()
            if op.type in _WRITES and op not in initializers
            and op.inputs and op.inputs[0].op in handles]


def _into_collections(variables: list) -> None:
    import tensorflow as tf

    keys = tf.compat.v1.GraphKeys
    global_variables = tf.compat.v1.get_collection_ref(keys.GLOBAL_VARIABLES)
    for variable in variables:
        if any(variable is v for v in global_variables):
            global_variables[:] = [v for v in global_variables if v is not variable]
        for collection in (keys.LOCAL_VARIABLES, keys.METRIC_VARIABLES):
            if not any(variable is v for v in tf.compat.v1.get_collection(collection)):
                tf.compat.v1.add_to_collection(collection, variable)
