"""`ModeKeys` and `EstimatorSpec`: what a `model_fn` is called with and what it returns.

`EstimatorSpec` is checked when it is made, with tf.estimator's rules and exception
types (a TRAIN spec needs `loss` and `train_op`, EVAL needs `loss`, PREDICT needs
`predictions`; tensors must come from the graph being built; metrics are
`(value, update_op)` pairs), each message naming the field, what was given and the fix.

Example:
    ```python
    def model_fn(features, labels, mode):
        ...
        return EstimatorSpec(mode, loss=loss, train_op=train_op,
                             eval_metric_ops={"accuracy": accuracy})
    ```
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

__all__ = ["EstimatorSpec", "ModeKeys"]


class ModeKeys:
    """The three modes a `model_fn` is called in (the strings tf.estimator uses)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)
_MODE_NAMES = {ModeKeys.TRAIN: "TRAIN", ModeKeys.EVAL: "EVAL", ModeKeys.PREDICT: "PREDICT"}


class EstimatorSpec(NamedTuple("EstimatorSpec", [
        ("mode", str), ("predictions", Any), ("loss", Any), ("train_op", Any),
        ("eval_metric_ops", Any), ("export_outputs", Any), ("training_chief_hooks", tuple),
        ("training_hooks", tuple), ("scaffold", Any), ("evaluation_hooks", tuple),
        ("prediction_hooks", tuple)])):
    """What a `model_fn` returns: the ops and tensors of one mode, validated.

    Same fields and defaults as `tf.estimator.EstimatorSpec`. Raises ValueError for
    a missing or malformed field and TypeError for a value of the wrong kind.
    """

    def __new__(cls, mode: str, predictions: Any = None, loss: Any = None,
                train_op: Any = None, eval_metric_ops: Any = None, export_outputs: Any = None,
                training_chief_hooks: Any = None, training_hooks: Any = None,
                scaffold: Any = None, evaluation_hooks: Any = None,
                prediction_hooks: Any = None) -> "EstimatorSpec":
        import tensorflow as tf

        if mode is not None and mode not in _MODES:  # None: a model_fn without `mode`
            raise ValueError(f"EstimatorSpec `mode` ({mode!r}) must be one of "
                             f"{', '.join(repr(m) for m in _MODES)} (ModeKeys.TRAIN, EVAL, "
                             "PREDICT): pass the `mode` your model_fn was called with")
        graph = tf.compat.v1.get_default_graph()
        if mode == ModeKeys.TRAIN and train_op is None:
            raise ValueError("EstimatorSpec for mode TRAIN is missing `train_op`: return the "
                             "optimizer's minimize(...) op, e.g. "
                             "optimizer.minimize(loss, global_step=...)")
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL) and loss is None:
            raise ValueError(f"EstimatorSpec for mode {_MODE_NAMES[mode]} "
                             "is missing `loss`: return the scalar loss tensor")
        if mode == ModeKeys.PREDICT and predictions is None:
            raise ValueError("EstimatorSpec for mode PREDICT is missing `predictions`: "
                             "return a Tensor or a dict of Tensors")
        loss = _check_loss(loss, graph)
        if train_op is not None:
            _check_in_graph("train_op", train_op, graph)
        predictions = _check_predictions(predictions, graph)
        eval_metric_ops = _check_metrics(eval_metric_ops, graph)
        export_outputs = _check_export_outputs(export_outputs)
        hooks = {name: _check_hooks(name, value) for name, value in (
            ("training_chief_hooks", training_chief_hooks),
            ("training_hooks", training_hooks), ("evaluation_hooks", evaluation_hooks),
            ("prediction_hooks", prediction_hooks))}
        scaffold = _check_scaffold(scaffold)
        return super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops,
                               export_outputs, hooks["training_chief_hooks"],
                               hooks["training_hooks"], scaffold, hooks["evaluation_hooks"],
                               hooks["prediction_hooks"])


def _is_tensor_like(value: Any) -> bool:
    import tensorflow as tf

    return isinstance(value, (tf.Tensor, tf.SparseTensor, tf.Operation, tf.Variable))


def _check_in_graph(field: str, value: Any, graph: Any) -> None:
    import tensorflow as tf

    if not _is_tensor_like(value):
        raise TypeError(f"EstimatorSpec `{field}` must be a Tensor or Operation, given: "
                        f"{value!r}")
    owner = getattr(value, "graph", None)
    if owner is not None and owner is not graph:
        raise ValueError(f"EstimatorSpec `{field}` ({value!r}) must be from the default "
                         "graph, the one the model_fn is called in: build it inside the "
                         "model_fn, not in a tf.Graph of your own or eagerly")


def _check_loss(loss: Any, graph: Any) -> Any:
    import tensorflow as tf

    if loss is None:
        return None
    if not isinstance(loss, tf.Tensor):
        raise TypeError(f"EstimatorSpec `loss` must be a Tensor, given: {loss!r}")
    _check_in_graph("loss", loss, graph)
    shape = loss.shape
    if shape.rank is not None and shape.rank > 0:
        if shape.num_elements() != 1:
            raise ValueError(f"EstimatorSpec `loss` must be a scalar, given shape {shape}: "
                             "reduce it, e.g. tf.reduce_mean(per_example_loss)")
        loss = tf.reshape(loss, [])
    return loss


def _check_predictions(predictions: Any, graph: Any) -> Any:
    if predictions is None:
        return None
    if isinstance(predictions, Mapping):
        for key, value in predictions.items():
            _check_in_graph(f"predictions[{key!r}]", value, graph)
        return dict(predictions)
    _check_in_graph("predictions", predictions, graph)
    return predictions


def _check_metrics(metrics: Any, graph: Any) -> dict:
    if metrics is None:
        return {}
    if not isinstance(metrics, Mapping):
        raise TypeError(f"EstimatorSpec `eval_metric_ops` must be a dict, given: {metrics!r}")
    checked = {}
    for name, pair in metrics.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(
                f"EstimatorSpec `eval_metric_ops[{name!r}]` must be a (value, update_op) "
                f"pair, such as tf.compat.v1.metrics.accuracy(...) returns, given: {pair!r}")
        for part, value in zip(("value", "update_op"), pair):
            _check_in_graph(f"eval_metric_ops[{name!r}] {part}", value, graph)
        checked[name] = tuple(pair)
    return checked


def _check_export_outputs(outputs: Any) -> Any:
    from trainexec.estimator_engine.export_outputs import ExportOutput

    if outputs is None:
        return None
    if not isinstance(outputs, Mapping):
        raise TypeError(f"EstimatorSpec `export_outputs` must be a dict, given: {outputs!r}")
    for key, value in outputs.items():
        if not isinstance(value, ExportOutput):
            raise TypeError(
                f"EstimatorSpec `export_outputs[{key!r}]` must be an ExportOutput "
                "(trainexec.estimator.export.PredictOutput, ClassificationOutput or "
                f"RegressionOutput), given: {value!r}")
    return dict(outputs)


def _check_hooks(field: str, hooks: Any) -> tuple:
    import tensorflow as tf

    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"EstimatorSpec `{field}` must hold SessionRunHook instances, "
                            f"given: {hook!r}")
    return hooks


def _check_scaffold(scaffold: Any) -> Any:
    import tensorflow as tf

    if scaffold is None:
        return tf.compat.v1.train.Scaffold()
    if not isinstance(scaffold, tf.compat.v1.train.Scaffold):
        raise TypeError(f"EstimatorSpec `scaffold` must be a tf.compat.v1.train.Scaffold, "
                        f"given: {scaffold!r}")
    saver = scaffold.saver  # a Saver, a tf.train.Checkpoint, or anything saving like one
    if saver is not None and not isinstance(saver, tf.train.Checkpoint) and not all(
            callable(getattr(saver, method, None)) for method in ("save", "restore")):
        raise TypeError(
            f"EstimatorSpec `scaffold.saver` ({type(saver).__name__}) must save and restore "
            "checkpoints: give a tf.compat.v1.train.Saver, a tf.train.Checkpoint (object-"
            "based checkpoints), or an object with save(session, path, global_step=...) and "
            "restore(session, path)")
    return scaffold
