"""`ModeKeys` and `EstimatorSpec`: what a `model_fn` is called with and what it returns.

`EstimatorSpec` is checked when it is made (and again by `_replace`), with
tf.estimator's rules, exception types and words, each message then naming what was
given and the fix:

* TRAIN needs `loss` and `train_op`, EVAL `loss`, PREDICT `predictions`;
* `loss` is a Tensor with one element (a `[1]` loss is reshaped to a scalar),
  `train_op` an Operation or Tensor, `predictions` a Tensor or a dict of Tensors,
  all from the graph the `model_fn` is called in;
* `eval_metric_ops` maps names to `(metric_value, update_op)` tuples (the value may
  be a nested tuple of tensors) or to Keras `Metric` objects after `update_state(...)`,
  which become such tuples (`keras_metrics`);
* hooks are `SessionRunHook`s, `scaffold` a `tf.compat.v1.train.Scaffold` (a default
  one when none is given);
* in PREDICT mode `export_outputs` is a dict of `ExportOutput`s with a
  `serving_default` entry: the only output is also the default, and a spec with none
  gets `PredictOutput(predictions)`, so every export has a default signature.

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

__all__ = ["DEFAULT_SIGNATURE", "EstimatorSpec", "ModeKeys"]

DEFAULT_SIGNATURE = "serving_default"  # tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


class ModeKeys:
    """The three modes a `model_fn` is called in (the strings tf.estimator uses)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)
_MODE_NAMES = {ModeKeys.TRAIN: "TRAIN", ModeKeys.EVAL: "EVAL", ModeKeys.PREDICT: "PREDICT"}
_HOOK_FIELDS = ("training_chief_hooks", "training_hooks", "evaluation_hooks",
                "prediction_hooks")


class EstimatorSpec(NamedTuple("EstimatorSpec", [
        ("mode", str), ("predictions", Any), ("loss", Any), ("train_op", Any),
        ("eval_metric_ops", Any), ("export_outputs", Any), ("training_chief_hooks", tuple),
        ("training_hooks", tuple), ("scaffold", Any), ("evaluation_hooks", tuple),
        ("prediction_hooks", tuple)])):
    """What a `model_fn` returns: the ops and tensors of one mode, validated.

    Same fields, defaults and checks as `tf.estimator.EstimatorSpec` (module doc).
    Raises ValueError for a missing or malformed field and TypeError for a value of
    the wrong kind.
    """

    def __new__(cls, mode: str, predictions: Any = None, loss: Any = None,
                train_op: Any = None, eval_metric_ops: Any = None, export_outputs: Any = None,
                training_chief_hooks: Any = None, training_hooks: Any = None,
                scaffold: Any = None, evaluation_hooks: Any = None,
                prediction_hooks: Any = None) -> "EstimatorSpec":
        if mode is not None and mode not in _MODES:  # None: a model_fn without `mode`
            raise ValueError(f"EstimatorSpec `mode` ({mode!r}) must be one of "
                             f"{', '.join(repr(m) for m in _MODES)} (ModeKeys.TRAIN, EVAL, "
                             "PREDICT): pass the `mode` your model_fn was called with")
        train_op = _check_train_op(train_op, mode)
        loss = _check_loss(loss, mode)
        predictions = _check_predictions(predictions, mode)
        if mode == ModeKeys.PREDICT:
            export_outputs = _check_export_outputs(export_outputs, predictions)
        hooks = {name: _check_hooks(name, value) for name, value in zip(
            _HOOK_FIELDS, (training_chief_hooks, training_hooks, evaluation_hooks,
                           prediction_hooks))}
        eval_metric_ops = _check_metrics(eval_metric_ops)
        scaffold = _check_scaffold(scaffold)
        return super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops,
                               export_outputs, hooks["training_chief_hooks"],
                               hooks["training_hooks"], scaffold, hooks["evaluation_hooks"],
                               hooks["prediction_hooks"])

    def _replace(self, **fields: Any) -> "EstimatorSpec":
        """A new EstimatorSpec with `fields` replaced, checked as a new one is; its
        mode cannot change."""
        if "mode" in fields and fields["mode"] != self.mode:
            raise ValueError(
                f"mode of EstimatorSpec cannot be changed: this spec is for mode "
                f"{self.mode!r}, _replace was given mode={fields['mode']!r}. Build a new "
                "EstimatorSpec for the other mode")
        unknown = set(fields) - set(self._fields)
        if unknown:
            raise ValueError(f"EstimatorSpec._replace: no field {', '.join(sorted(unknown))}; "
                             f"the fields are {', '.join(self._fields)}")
        return EstimatorSpec(**{**self._asdict(), **fields})


def _kind(value: Any) -> str:
    return type(value).__name__


def _graph_error(field: str, name: str) -> ValueError:
    return ValueError(
        f"{field} with {name!r} must be from the default graph, the one the model_fn is "
        "called in: it was built in another tf.Graph (or eagerly), or kept from an earlier "
        "call of the model_fn. Build it inside the model_fn, every time it is called")


def _check_graph(field: str, value: Any) -> None:
    import tensorflow as tf

    if tf.executing_eagerly():
        return
    if getattr(value, "graph", None) is not tf.compat.v1.get_default_graph():
        raise _graph_error(field, getattr(value, "name", repr(value)))


def _check_train_op(train_op: Any, mode: str) -> Any:
    import tensorflow as tf

    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op: an EstimatorSpec for mode TRAIN needs "
                             "`train_op`, the op of one training step, e.g. "
                             "optimizer.minimize(loss, global_step=tf.compat.v1.train."
                             "get_global_step())")
        return None
    if not isinstance(train_op, (tf.Operation, tf.Tensor, tf.Variable)):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op!r} (type "
                        f"{_kind(train_op)}): EstimatorSpec `train_op` is the op of one "
                        "training step, e.g. optimizer.minimize(loss, global_step=...)")
    if isinstance(train_op, tf.Variable):
        train_op = train_op.op
    _check_graph("train_op", train_op)
    return train_op


def _check_loss(loss: Any, mode: str) -> Any:
    import tensorflow as tf

    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError(f"Missing loss: an EstimatorSpec for mode {_MODE_NAMES[mode]} "
                             "needs `loss`, the scalar loss Tensor, e.g. "
                             "tf.compat.v1.losses.mean_squared_error(labels, predictions)")
        return None
    if not isinstance(loss, (tf.Tensor, tf.Variable)):
        raise TypeError(f"loss must be Tensor, given: {loss!r} (type {_kind(loss)}): "
                        "EstimatorSpec `loss` is the scalar loss Tensor the model_fn "
                        "computes, e.g. tf.reduce_mean(per_example_loss)")
    shape = loss.shape
    if shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss!r} (shape {shape}): reduce "
                         "EstimatorSpec `loss` to one value, e.g. "
                         "tf.reduce_mean(per_example_loss)")
    if not shape.is_compatible_with(tf.TensorShape([])):
        loss = tf.reshape(loss, [])
    _check_graph("loss", loss)
    return loss


def _check_tensor(field: str, value: Any) -> Any:
    import tensorflow as tf

    if not isinstance(value, (tf.Tensor, tf.Variable)):
        hint = (" (tf.sparse.to_dense turns a SparseTensor into one)"
                if isinstance(value, tf.SparseTensor) else "")
        raise TypeError(f"{field} must be Tensor, given: {value!r} (type {_kind(value)}): "
                        f"EstimatorSpec `predictions` holds Tensors only{hint}")
    return value


def _check_predictions(predictions: Any, mode: str) -> Any:
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions: an EstimatorSpec for mode PREDICT needs "
                             "`predictions`, a Tensor or a dict of Tensors by name")
        return {}
    if isinstance(predictions, dict):
        checked = {key: _check_tensor(f"predictions[{key}]", value)
                   for key, value in predictions.items()}
        for key, value in checked.items():
            _check_graph("prediction values", value)
        return checked
    _check_graph("prediction values", _check_tensor("predictions", predictions))
    return predictions


def _check_export_outputs(outputs: Any, predictions: Any) -> dict:
    """PREDICT mode's export outputs, `serving_default` among them (module doc)."""
    from trainexec.estimator_engine.export_outputs import ExportOutput, PredictOutput

    if outputs is None:
        return {DEFAULT_SIGNATURE: PredictOutput(predictions)}
    if not isinstance(outputs, dict):
        raise TypeError(f"`export_outputs` must be dict, given: {outputs!r} (type "
                        f"{_kind(outputs)}): EstimatorSpec `export_outputs` maps signature "
                        f"names to ExportOutputs, e.g. {{{DEFAULT_SIGNATURE!r}: output}}")
    for key, value in outputs.items():
        if not isinstance(value, ExportOutput):
            raise TypeError(
                f"Values in `export_outputs` must be ExportOutput objects, given: "
                f"{key!r}: {value!r} (type {_kind(value)}): use trainexec.estimator.export."
                "PredictOutput, ClassificationOutput or RegressionOutput")
    outputs = dict(outputs)
    if len(outputs) == 1 and DEFAULT_SIGNATURE not in outputs:
        outputs[DEFAULT_SIGNATURE] = next(iter(outputs.values()))
    if DEFAULT_SIGNATURE not in outputs:
        raise ValueError(
            f"Multiple `export_outputs` were provided, but none of them are specified as "
            f"the default: EstimatorSpec `export_outputs` has {len(outputs)} outputs "
            f"({', '.join(sorted(map(str, outputs)))}) and none is {DEFAULT_SIGNATURE!r}. "
            f"Name the one TF Serving serves by default {DEFAULT_SIGNATURE!r} "
            "(tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY)")
    return outputs


def _check_hooks(field: str, hooks: Any) -> tuple:
    import tensorflow as tf

    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook!r} "
                            f"(type {_kind(hook)}) in EstimatorSpec `{field}`: subclass "
                            "tf.compat.v1.train.SessionRunHook")
    return hooks


def _check_metrics(metrics: Any) -> dict:
    import tensorflow as tf

    from trainexec.estimator_engine.keras_metrics import is_metric_object, metric_pair

    if metrics is None:
        return {}
    if not isinstance(metrics, Mapping):
        raise TypeError(f"eval_metric_ops must be a dict, given: {metrics!r} (type "
                        f"{_kind(metrics)}): EstimatorSpec `eval_metric_ops` maps metric "
                        "names to (metric_value, update_op) tuples or Keras Metric objects")
    fix = ("e.g. tf.compat.v1.metrics.accuracy(labels, predictions), or a Keras metric "
           "after metric.update_state(...)")
    for key, value in metrics.items():
        if not is_metric_object(value) and not (isinstance(value, (tuple, list))
                                               and len(value) == 2):
            raise TypeError(f"Values of eval_metric_ops must be (metric_value, update_op) "
                            f"tuples, given: {value!r} for key: {key} (type {_kind(value)}): "
                            + fix)
    checked = {}
    for key, value in metrics.items():
        if is_metric_object(value):
            checked[key] = metric_pair(key, value)
            continue
        for item in tf.nest.flatten(tuple(value)):
            if not hasattr(item, "graph"):
                raise TypeError(f"Values of eval_metric_ops must be (metric_value, "
                                f"update_op) tuples of Tensors and Operations, given: "
                                f"{item!r} (type {_kind(item)}) in {key}: " + fix)
            _check_graph("eval_metric_ops", item)
        checked[key] = tuple(value)
    return checked


def _check_scaffold(scaffold: Any) -> Any:
    import tensorflow as tf

    if not scaffold:
        return tf.compat.v1.train.Scaffold()
    if not isinstance(scaffold, tf.compat.v1.train.Scaffold):
        raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold!r} (type "
                        f"{_kind(scaffold)}): EstimatorSpec `scaffold` takes a "
                        "tf.compat.v1.train.Scaffold, or None for the default one")
    saver = scaffold.saver  # a Saver, a tf.train.Checkpoint, or anything saving like one
    if saver is not None and not isinstance(saver, tf.train.Checkpoint) and not all(
            callable(getattr(saver, method, None)) for method in ("save", "restore")):
        raise TypeError(
            f"EstimatorSpec `scaffold.saver` ({type(saver).__name__}) must save and restore "
            "checkpoints: give a tf.compat.v1.train.Saver, a tf.train.Checkpoint (object-"
            "based checkpoints), or an object with save(session, path, global_step=...) and "
            "restore(session, path)")
    return scaffold
