"""`DNNLinearCombinedClassifier`, `DNNLinearCombinedRegressor`,
`DNNLinearCombinedEstimator`: wide and deep, a linear model and a DNN whose logits add
up (tf.estimator's v2 combined estimators: the same arguments, defaults and variable
names).

The DNN part is `dnn.dnn_logits` (`dnn/...`), the linear part `linear.linear_part`
(`linear/linear_model/...`); either may be left out, not both. Each part trains with its
own optimizer (`dnn_optimizer`, default `'Adagrad'` at 0.001; `linear_optimizer`,
default `'Ftrl'` at `min(0.005, 1/sqrt(len(linear_feature_columns)))`), and the DNN's
(the linear one's when there is no DNN) advances the global step, as in tf.estimator.

Example:
    ```python
    import tensorflow as tf
    import trainexec.estimator as estimator

    city = tf.feature_column.categorical_column_with_hash_bucket("city", 100)
    fare = tf.feature_column.numeric_column("fare")
    model = estimator.DNNLinearCombinedClassifier(
        model_dir="/tmp/taxi", linear_feature_columns=[city],
        dnn_feature_columns=[fare, tf.feature_column.embedding_column(city, 8)],
        dnn_hidden_units=[32, 16])
    ```
"""

from __future__ import annotations

import math
from typing import Any, Callable

from trainexec.estimator_engine.canned import arguments
from trainexec.estimator_engine.canned import feature_inputs as inputs
from trainexec.estimator_engine.canned import optimizers
from trainexec.estimator_engine.canned.dnn import relu, dnn_logits, layer_summary
from trainexec.estimator_engine.canned.linear import linear_part
from trainexec.estimator_engine.estimator import Estimator

__all__ = ["DNNLinearCombinedClassifier", "DNNLinearCombinedEstimator",
           "DNNLinearCombinedRegressor"]

_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005
_SUM_OVER_BATCH_SIZE = "sum_over_batch_size"


def _check_not_sync_replicas(optimizer: Any) -> None:
    import tensorflow as tf

    if isinstance(optimizer, tf.compat.v1.train.SyncReplicasOptimizer):
        raise ValueError(
            "SyncReplicasOptimizer does not support multi optimizers case. Therefore, it "
            "is not supported in DNNLinearCombined model. If you want to use this "
            "optimizer, please use either DNN or Linear model.")


class _Parts:
    """The checked arguments of a combined model."""

    def __init__(self, linear_feature_columns: Any, linear_optimizer: Any,
                 dnn_feature_columns: Any, dnn_optimizer: Any, dnn_hidden_units: Any,
                 dnn_activation_fn: Callable | None, dnn_dropout: Any, batch_norm: bool,
                 linear_sparse_combiner: str) -> None:
        if not linear_feature_columns and not dnn_feature_columns:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns "
                             "must be defined.")
        self.linear_columns = (inputs.check_linear_columns(
            linear_feature_columns, "linear_feature_columns")
            if linear_feature_columns else [])
        self.dnn_columns = (inputs.check_dense_columns(
            dnn_feature_columns, "dnn_feature_columns") if dnn_feature_columns else [])
        if self.dnn_columns and not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns "
                             "is specified.")
        self.hidden_units = (arguments.check_hidden_units(dnn_hidden_units,
                                                          "dnn_hidden_units")
                             if self.dnn_columns else [])
        self.linear_optimizer = optimizers.check_optimizer(linear_optimizer,
                                                           "linear_optimizer")
        self.dnn_optimizer = optimizers.check_optimizer(dnn_optimizer, "dnn_optimizer")
        self.activation_fn = dnn_activation_fn
        self.dropout = arguments.check_dropout(dnn_dropout, "dnn_dropout")
        self.batch_norm = bool(batch_norm)
        self.sparse_combiner = inputs.check_sparse_combiner(linear_sparse_combiner,
                                                            "linear_sparse_combiner")


def combined_model_fn(head: Any, parts: _Parts) -> Callable:
    """The `model_fn` of a combined model with `head`."""
    import tensorflow as tf

    from trainexec.estimator_engine.model_spec import ModeKeys

    def model_fn(features: Any, labels: Any, mode: str) -> Any:
        inputs.check_features(features)
        units, logits, trains = head.logits_dimension, [], []
        if parts.dnn_columns:
            dnn_out, dnn_vars, update_ops = dnn_logits(
                features, mode, units, parts.hidden_units, parts.dnn_columns,
                parts.activation_fn, parts.dropout, parts.batch_norm)
            logits.append(dnn_out)
            if mode == ModeKeys.TRAIN:
                opt = optimizers.get_optimizer(parts.dnn_optimizer, _DNN_LEARNING_RATE)
                _check_not_sync_replicas(opt)
                trains.append((opt, dnn_vars, update_ops))
        if parts.linear_columns:
            linear_out, linear_vars = linear_part(features, parts.linear_columns, units,
                                                  parts.sparse_combiner)
            layer_summary(linear_out, "linear")
            logits.append(linear_out)
            if mode == ModeKeys.TRAIN:
                rate = min(_LINEAR_LEARNING_RATE,
                           1.0 / math.sqrt(len(parts.linear_columns)))
                opt = optimizers.get_optimizer(parts.linear_optimizer, rate)
                _check_not_sync_replicas(opt)
                trains.append((opt, linear_vars, []))
        if trains:  # the first optimizer (the DNN's, if any) counts the global step
            optimizers.own_global_step(trains[0][0])

        def train_op_fn(loss: Any) -> Any:
            if head.loss_reduction == _SUM_OVER_BATCH_SIZE:
                replicas = tf.distribute.get_strategy().num_replicas_in_sync
                if replicas > 1:
                    loss *= 1.0 / replicas
            ops = []
            for index, (opt, variables, update_ops) in enumerate(trains):
                ops.append(optimizers.apply_updates(opt, loss, variables,
                                                    advances_step=index == 0))
                ops.extend(update_ops)
            return tf.group(*ops)

        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, train_op_fn=train_op_fn,
            logits=logits[0] + logits[1] if len(logits) == 2 else logits[0])

    return model_fn


class DNNLinearCombinedEstimator(Estimator):
    """Wide and deep with the given head (tf.estimator's
    `DNNLinearCombinedEstimator`)."""

    def __init__(self, head: Any, model_dir: str | None = None,
                 linear_feature_columns: Any = None, linear_optimizer: Any = "Ftrl",
                 dnn_feature_columns: Any = None, dnn_optimizer: Any = "Adagrad",
                 dnn_hidden_units: Any = None,
                 dnn_activation_fn: Callable | None = relu, dnn_dropout: Any = None,
                 config: Any = None, batch_norm: bool = False,
                 linear_sparse_combiner: str = "sum") -> None:
        """Args as tf.estimator's (module doc).

        Raises:
            ValueError: with neither feature column list, DNN columns without
                `dnn_hidden_units`, bad hidden units or columns (as `DNNEstimator`,
                `LinearEstimator`), an unknown optimizer name.
        """
        parts = _Parts(linear_feature_columns, linear_optimizer, dnn_feature_columns,
                       dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                       batch_norm, linear_sparse_combiner)
        super().__init__(model_fn=combined_model_fn(arguments.check_head(head), parts),
                         model_dir=model_dir, config=config)


class DNNLinearCombinedClassifier(Estimator):
    """A wide-and-deep classifier (tf.estimator's `DNNLinearCombinedClassifier`)."""

    def __init__(self, model_dir: str | None = None, linear_feature_columns: Any = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Any = None,
                 dnn_optimizer: Any = "Adagrad", dnn_hidden_units: Any = None,
                 dnn_activation_fn: Callable | None = relu, dnn_dropout: Any = None,
                 n_classes: int = 2, weight_column: Any = None,
                 label_vocabulary: Any = None, config: Any = None,
                 warm_start_from: Any = None, loss_reduction: str = _SUM_OVER_BATCH_SIZE,
                 batch_norm: bool = False, linear_sparse_combiner: str = "sum") -> None:
        """Args as tf.estimator's; see `DNNLinearCombinedEstimator` for what is
        refused, and ValueError for `n_classes` < 2."""
        parts = _Parts(linear_feature_columns, linear_optimizer, dnn_feature_columns,
                       dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                       batch_norm, linear_sparse_combiner)
        head = arguments.classification_head(n_classes, weight_column, label_vocabulary,
                                             loss_reduction)
        super().__init__(model_fn=combined_model_fn(head, parts), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(Estimator):
    """A wide-and-deep regressor (tf.estimator's `DNNLinearCombinedRegressor`)."""

    def __init__(self, model_dir: str | None = None, linear_feature_columns: Any = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Any = None,
                 dnn_optimizer: Any = "Adagrad", dnn_hidden_units: Any = None,
                 dnn_activation_fn: Callable | None = relu, dnn_dropout: Any = None,
                 label_dimension: int = 1, weight_column: Any = None, config: Any = None,
                 warm_start_from: Any = None, loss_reduction: str = _SUM_OVER_BATCH_SIZE,
                 batch_norm: bool = False, linear_sparse_combiner: str = "sum") -> None:
        """Args as tf.estimator's; see `DNNLinearCombinedEstimator` for what is
        refused."""
        parts = _Parts(linear_feature_columns, linear_optimizer, dnn_feature_columns,
                       dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                       batch_norm, linear_sparse_combiner)
        head = arguments.regression_head(label_dimension, weight_column, loss_reduction)
        super().__init__(model_fn=combined_model_fn(head, parts), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)
