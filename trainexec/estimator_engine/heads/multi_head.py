"""`MultiHead`: several named heads trained together (multi-objective learning).

* logits: a dict by head name, or one Tensor `[D0, ... DN, sum of the heads'
  logits_dimension]` split along its last dimension in the heads' order;
* labels: a dict by head name;
* loss: the (optionally `head_weights`-weighted) sum of the heads' losses, plus
  `regularization_losses`;
* predictions: every head's, keyed `(head name, prediction key)`;
* metrics: every head's (their keys end in `/<head name>`), and `loss/<head name>`;
* signatures: `serving_default` is the first head's default; each head's signatures
  as `<head name>` (its default) and `<head name>/<key>`; `predict` serves every
  head's predictions as `<head name>/<key>`.

Example:
    ```python
    head = MultiHead([MultiClassHead(3, name="kind"), BinaryClassHead(name="spam")])
    spec = head.create_estimator_spec(features=features, mode=mode, optimizer=optimizer,
                                      logits={"kind": kind_logits, "spam": spam_logits},
                                      labels={"kind": kind, "spam": spam})
    ```
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from trainexec.estimator_engine.heads import losses, metrics
from trainexec.estimator_engine.heads import train_op as train_op_lib
from trainexec.estimator_engine.heads.base import Head
from trainexec.estimator_engine.heads.keys import (DEFAULT_SERVING_KEY, PREDICT_SERVING_KEY,
                                                   MetricKeys)

__all__ = ["MultiHead"]


def _no_train_op(loss: Any) -> Any:
    import tensorflow as tf

    return tf.no_op()


class MultiHead(Head):
    """Several named heads as one (module doc).

    Args:
        heads: the heads, each with a `name`; the first one is served by default.
        head_weights: one weight per head for the loss sum, or None (all 1).
    """

    def __init__(self, heads: Sequence[Head], head_weights: Sequence[float] | None = None
                 ) -> None:
        if not heads:
            raise ValueError(f"Must specify heads. Given: {heads}. MultiHead needs at least "
                             "one (named) head")
        if head_weights and len(head_weights) != len(heads):
            raise ValueError(f"heads and head_weights must have the same size. Given "
                             f"len(heads): {len(heads)}. Given len(head_weights): "
                             f"{len(head_weights)}. Give one weight per head, in order")
        for head in heads:
            if head.name is None:
                raise ValueError(f"All given heads must have name specified. Given: {head}. "
                                 "Give each head name=..., the key of its logits and labels")
        self._heads = tuple(heads)
        self._head_weights = tuple(head_weights) if head_weights else ()

    @property
    def name(self) -> str:
        return "_".join(str(head.name) for head in self._heads)

    @property
    def logits_dimension(self) -> Any:
        return sum(head.logits_dimension for head in self._heads)

    @property
    def loss_reduction(self) -> str:
        reductions = [head.loss_reduction for head in self._heads]
        if len(set(reductions)) > 1:
            raise ValueError(f"The loss_reduction must be the same for different heads. "
                             f"Given: {reductions}. Give every head one loss_reduction")
        return reductions[0]

    def _split_logits(self, logits: Any) -> dict:
        import tensorflow as tf

        with tf.compat.v1.name_scope("split_logits"):
            logits = tf.convert_to_tensor(logits)
            dims = [head.logits_dimension for head in self._heads]
            last = logits.shape.as_list()[-1]
            if last is not None and last != sum(dims):
                raise ValueError(
                    f"Could not split logits of shape {logits.shape.as_list()!r} among the "
                    f"heads with individual logits dimensions: {dims!r}. The last dimension "
                    f"of the logits tensor should equal {sum(dims)} but is {last}. (Give "
                    "a dict of logits by head name, or one Tensor whose last dimension "
                    "is head.logits_dimension.)")
            batch = tf.shape(logits)[:-1]
            split, begin = {}, 0
            for head in self._heads:
                split[head.name] = tf.slice(
                    logits, tf.concat([tf.zeros_like(batch), [begin]], 0),
                    tf.concat([-tf.ones_like(batch), [head.logits_dimension]], 0))
                begin += head.logits_dimension
        return split

    def _logits_by_head(self, logits: Any, labels: Any = None) -> dict:
        names = [str(head.name) for head in self._heads]
        if isinstance(logits, dict):
            missing = sorted(set(names) - set(logits))
            if missing:
                raise ValueError(f"logits has missing values for head(s): {missing}. Give "
                                 f"logits for every head: {names}")
            by_head = logits
        else:
            by_head = self._split_logits(logits)
        if labels is not None:
            if not isinstance(labels, dict):
                raise ValueError(f"labels must be a dict. Given: {labels}. MultiHead takes "
                                 f"labels by head name: {names}")
            missing = sorted(set(names) - set(labels))
            if missing:
                raise ValueError(f"labels has missing values for head(s): {missing}. The "
                                 f"input_fn must give labels for every head: {names}")
        return by_head

    def loss(self, labels: Any, logits: Any, features: Any = None, mode: Any = None,
             regularization_losses: Any = None) -> Any:
        """The weighted sum of the heads' losses, regularization added."""
        import tensorflow as tf

        by_head = self._logits_by_head(logits, labels)
        parts = [head.loss(labels[head.name], by_head[head.name], features=features,
                           mode=mode) for head in self._heads]
        with tf.compat.v1.name_scope("merge_losses"):
            if self._head_weights:
                parts = [part * weight for part, weight in zip(parts, self._head_weights)]
            return losses.regularized(tf.math.add_n(parts), regularization_losses)

    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """Every head's predictions, keyed `(head name, prediction key)`."""
        import tensorflow as tf

        by_head = self._logits_by_head(logits)
        merged = {}
        with tf.compat.v1.name_scope("merge_pred"):
            for head in self._heads:
                for key, value in head.predictions(by_head[head.name]).items():
                    merged[(head.name, key)] = value
        return merged

    def metrics(self, regularization_losses: Any = None) -> dict:
        """New `loss/<head name>` means (and the regularization loss's); the heads'
        own metrics join in `update_metrics`."""
        import tensorflow as tf

        made: dict = {}
        if regularization_losses is not None:
            key = self.metric_key(MetricKeys.LOSS_REGULARIZATION)
            made[key] = metrics.Mean(MetricKeys.LOSS_REGULARIZATION)
        with tf.compat.v1.name_scope("merge_eval"):
            for head in self._heads:
                key = f"{MetricKeys.LOSS}/{head.name}"
                made[key] = metrics.Mean(key)
        return made

    def update_metrics(self, eval_metrics: dict, features: Any, logits: Any, labels: Any,
                       regularization_losses: Any = None, mode: Any = None) -> dict:
        """`eval_metrics` updated with one batch, every head's metrics added."""
        import tensorflow as tf

        by_head = self._logits_by_head(logits, labels)
        if regularization_losses is not None:
            eval_metrics[self.metric_key(MetricKeys.LOSS_REGULARIZATION)].update_state(
                tf.math.add_n(list(regularization_losses)))
        for head in self._heads:
            head_logits, head_labels = by_head[head.name], labels[head.name]
            eval_metrics[f"{MetricKeys.LOSS}/{head.name}"].update_state(
                head.loss(head_labels, head_logits, features=features))
            eval_metrics.update(head.update_metrics(head.metrics(), features, head_logits,
                                                    head_labels) or {})
        return eval_metrics

    def create_estimator_spec(self, features: Any, mode: str, logits: Any,
                              labels: Any = None, optimizer: Any = None,
                              trainable_variables: Any = None,
                              train_op_fn: Callable | None = None, update_ops: Any = None,
                              regularization_losses: Any = None) -> Any:
        """The `EstimatorSpec` for `mode` (module doc; the heads' own training ops are
        not used: one op trains on the merged loss)."""
        import tensorflow as tf

        from trainexec.estimator_engine.model_spec import EstimatorSpec, ModeKeys

        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError(f"mode={mode} unrecognized: create_estimator_spec takes "
                             "ModeKeys.TRAIN, ModeKeys.EVAL or ModeKeys.PREDICT")
        with tf.compat.v1.name_scope(self.name, "multi_head"):
            by_head = self._logits_by_head(logits, labels)
            specs = []
            if mode in (ModeKeys.PREDICT, ModeKeys.TRAIN):  # signatures; loss summaries
                specs = [head.create_estimator_spec(
                    features=features, mode=mode, logits=by_head[head.name],
                    labels=labels[head.name] if labels else None, train_op_fn=_no_train_op)
                    for head in self._heads]
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions,
                                     export_outputs=self._export_outputs(specs))
            loss = self.loss(labels, logits, features, mode, regularization_losses)
            if mode == ModeKeys.EVAL:
                eval_metrics = self.update_metrics(
                    self.metrics(regularization_losses), features, logits, labels,
                    regularization_losses=regularization_losses)
                return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                     eval_metric_ops=eval_metrics)
            train_op = train_op_lib.make_train_op(
                loss, optimizer=optimizer, trainable_variables=trainable_variables,
                train_op_fn=train_op_fn, update_ops=update_ops,
                loss_reduction=self.loss_reduction)
            train_op_lib.add_loss_summaries(loss, regularization_losses)
            return EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=predictions)

    def _export_outputs(self, specs: list) -> dict:
        from trainexec.estimator_engine.export_outputs import PredictOutput

        first = specs[0].export_outputs
        if len(first) != 1 and DEFAULT_SERVING_KEY not in first:
            raise ValueError(f"{self._heads[0].name} did not specify default "
                             f"export_outputs. Given: {first} Suggested fix: Use one of "
                             "the heads in trainexec.estimator, or include key "
                             f"{DEFAULT_SERVING_KEY} in export_outputs.")
        outputs = {DEFAULT_SERVING_KEY: first.get(DEFAULT_SERVING_KEY,
                                                  next(iter(first.values())))}
        served: dict = {}
        for head, spec in zip(self._heads, specs):
            for key, output in spec.export_outputs.items():
                outputs[str(head.name) if key == DEFAULT_SERVING_KEY
                        else f"{head.name}/{key}"] = output
                if key == PREDICT_SERVING_KEY and isinstance(output, PredictOutput):
                    served.update({f"{head.name}/{name}": tensor
                                   for name, tensor in output.outputs.items()})
        outputs[PREDICT_SERVING_KEY] = PredictOutput(served)
        return outputs
