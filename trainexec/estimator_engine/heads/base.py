"""`Head`: what sits on a model's logits and makes the rest of its `EstimatorSpec`.

Given logits, a head knows the predictions, the loss, the evaluation metrics, the
training op and the export signatures (tf.estimator's `Head` API):

* `loss(labels, logits, features=None, mode=None, regularization_losses=None)`: the
  scalar training loss (regularization added);
* `predictions(logits, keys=None)`: a dict of Tensors by `PredictionKeys`;
* `metrics(regularization_losses=None)`: new metric objects by `MetricKeys` (a named
  head appends `/<name>`), and `update_metrics(eval_metrics, features, logits,
  labels, regularization_losses=None)` updating them with a batch;
* `create_estimator_spec(features, mode, logits, labels=None, optimizer=None,
  trainable_variables=None, train_op_fn=None, update_ops=None,
  regularization_losses=None)`: the `EstimatorSpec` a `model_fn` returns;
* `name`, `logits_dimension`, `loss_reduction`.

`SingleHead` writes `create_estimator_spec` once for the heads of one objective, over
the methods above and `export_outputs(predictions)`: PREDICT gives the predictions and
signatures; EVAL the loss and the updated metrics; TRAIN the loss, the training op
(`train_op.make_train_op`) and the loss summaries. Loss, predictions and metrics also
run eagerly (no Estimator), as tf.estimator's do.

Example:
    ```python
    def model_fn(features, labels, mode):
        head = BinaryClassHead()
        logits = tf.compat.v1.layers.dense(features["x"], head.logits_dimension)
        return head.create_estimator_spec(
            features=features, mode=mode, logits=logits, labels=labels,
            optimizer=tf.compat.v1.train.AdagradOptimizer(0.1))
    ```
"""

from __future__ import annotations

import abc
from typing import Any, Callable

from trainexec.estimator_engine.heads import train_op as train_op_lib
from trainexec.estimator_engine.heads.keys import PredictionKeys

__all__ = ["Head", "SingleHead", "check_prediction_keys"]


class Head(abc.ABC):
    """The interface of a head (module doc); subclass it for a head of your own."""

    @property
    @abc.abstractmethod
    def name(self) -> str | None:
        """The head's name: suffix of its metric keys, its ops' name scope."""

    @property
    @abc.abstractmethod
    def logits_dimension(self) -> Any:
        """The size of the logits' last dimension (classes, labels or values)."""

    @property
    @abc.abstractmethod
    def loss_reduction(self) -> str:
        """How the batch's losses reduce to one (a `tf.losses.Reduction` value)."""

    @abc.abstractmethod
    def loss(self, labels: Any, logits: Any, features: Any = None, mode: Any = None,
             regularization_losses: Any = None) -> Any:
        """The scalar training loss, regularization losses added."""

    @abc.abstractmethod
    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """The predictions, by `PredictionKeys` (all of them when `keys` is None)."""

    @abc.abstractmethod
    def metrics(self, regularization_losses: Any = None) -> dict:
        """New metric objects, by metric key."""

    @abc.abstractmethod
    def update_metrics(self, eval_metrics: dict, features: Any, logits: Any, labels: Any,
                       regularization_losses: Any = None, mode: Any = None) -> dict:
        """`eval_metrics` updated with one batch (and returned)."""

    def metric_key(self, key: str) -> str:
        """`key` as this head reports it: `key/name` for a named head."""
        return f"{key}/{self.name}" if self.name else key

    def create_estimator_spec(self, features: Any, mode: str, logits: Any,
                              labels: Any = None, optimizer: Any = None,
                              trainable_variables: Any = None,
                              train_op_fn: Callable | None = None, update_ops: Any = None,
                              regularization_losses: Any = None) -> Any:
        """The `EstimatorSpec` for `mode` (module doc). A subclass implements it (or,
        as tf.estimator lets it, `_create_tpu_estimator_spec`, whose result is used,
        through its `as_estimator_spec()` when it has one)."""
        try:
            spec = self._create_tpu_estimator_spec(
                features=features, mode=mode, logits=logits, labels=labels,
                optimizer=optimizer, trainable_variables=trainable_variables,
                train_op_fn=train_op_fn, update_ops=update_ops,
                regularization_losses=regularization_losses)
        except NotImplementedError:
            raise NotImplementedError(
                "Subclasses of Head must implement `create_estimator_spec()` or "
                "_create_tpu_estimator_spec(). (trainexec's heads implement "
                "create_estimator_spec; subclass SingleHead to inherit it.)") from None
        return spec.as_estimator_spec() if hasattr(spec, "as_estimator_spec") else spec

    def _create_tpu_estimator_spec(self, features: Any, mode: str, logits: Any,
                                   labels: Any = None, optimizer: Any = None,
                                   trainable_variables: Any = None,
                                   train_op_fn: Callable | None = None,
                                   update_ops: Any = None,
                                   regularization_losses: Any = None) -> Any:
        """tf.estimator's TPU variant: trainexec has no TPUEstimator."""
        raise NotImplementedError("TPUEstimatorSpec not available for this model head. "
                                  "(trainexec has no TPUEstimator: implement "
                                  "create_estimator_spec.)")


def check_prediction_keys(keys: Any, valid: list[str]) -> list[str]:
    """`keys` (all of `valid` when empty); ValueError for a key not in `valid`."""
    if not keys:
        return list(valid)
    for key in keys:
        if key not in valid:
            raise ValueError(f"Prediction key must be in PredictionKeys, given: {key}."
                             f"Valid prediction keys include {valid}. (This head predicts "
                             f"{', '.join(valid)}.)")
    return list(keys)


class SingleHead(Head):
    """A head of one objective: `create_estimator_spec` over its own methods."""

    def export_outputs(self, predictions: dict) -> dict:
        """PREDICT's signatures by name (`serving_default` among them)."""
        raise NotImplementedError

    def create_estimator_spec(self, features: Any, mode: str, logits: Any,
                              labels: Any = None, optimizer: Any = None,
                              trainable_variables: Any = None,
                              train_op_fn: Callable | None = None, update_ops: Any = None,
                              regularization_losses: Any = None) -> Any:
        """The `EstimatorSpec` for `mode`: see the module doc.

        Raises:
            ValueError: for an unknown mode, or in TRAIN mode when neither or both of
                `optimizer` and `train_op_fn` are given.
        """
        import tensorflow as tf

        from trainexec.estimator_engine.model_spec import EstimatorSpec, ModeKeys

        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError(f"mode={mode} unrecognized: create_estimator_spec takes "
                             "ModeKeys.TRAIN, ModeKeys.EVAL or ModeKeys.PREDICT")
        with tf.compat.v1.name_scope(self.name, "head"):
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions,
                                     export_outputs=self.export_outputs(predictions))
            loss = self.loss(labels, logits, features=features, mode=mode,
                             regularization_losses=regularization_losses)
            if mode == ModeKeys.EVAL:
                metrics = self.update_metrics(
                    self.metrics(regularization_losses=regularization_losses), features,
                    logits, labels, regularization_losses=regularization_losses)
                return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                     eval_metric_ops=metrics)
            train_op = train_op_lib.make_train_op(
                loss, optimizer=optimizer, trainable_variables=trainable_variables,
                train_op_fn=train_op_fn, update_ops=update_ops,
                loss_reduction=self.loss_reduction)
        train_op_lib.add_loss_summaries(loss, regularization_losses, self.metric_key)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


def predicted_classes(logits: Any, class_id_logits: Any, keys: list[str],
                      vocabulary: Any) -> dict:
    """`class_ids` and `classes` (when in `keys`) from the argmax of `class_id_logits`."""
    import tensorflow as tf

    from trainexec.estimator_engine.heads.vocabulary import class_names_of

    found: dict = {}
    if PredictionKeys.CLASS_IDS not in keys and PredictionKeys.CLASSES not in keys:
        return found
    class_ids = tf.expand_dims(tf.math.argmax(class_id_logits, axis=-1,
                                              name=PredictionKeys.CLASS_IDS), -1)
    if PredictionKeys.CLASS_IDS in keys:
        found[PredictionKeys.CLASS_IDS] = class_ids
    if PredictionKeys.CLASSES in keys:
        found[PredictionKeys.CLASSES] = (
            class_names_of(class_ids, vocabulary) if vocabulary
            else tf.strings.as_string(class_ids, name="str_classes"))
    return found
