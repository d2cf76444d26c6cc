"""`DNNClassifier`, `DNNRegressor`, `DNNEstimator`: a feed-forward network on dense
feature columns (tf.estimator's v2 DNN estimators: the same arguments, defaults and
variable names).

The network: the columns' dense input (`feature_inputs.dense_input`), then per hidden
layer `dnn/hiddenlayer_<i>/{kernel,bias}` (Glorot-uniform kernel, zero bias,
`activation_fn`), dropout while training when `dropout` is set, batch normalization
(`dnn/hiddenlayer_<i>/batchnorm_<i>/{gamma,beta,moving_mean,moving_variance}`, momentum
0.999) when `batch_norm`, and `dnn/logits/{kernel,bias}` with the head's
`logits_dimension` units. Written with `tf.compat.v1.get_variable` and plain ops, so it
builds the same graph under Keras 2 and Keras 3. Each layer's output gets tf.estimator's
summaries (`<layer>/fraction_of_zero_values`, `<layer>/activation`).

Example:
    ```python
    import tensorflow as tf
    import trainexec.estimator as estimator

    classifier = estimator.DNNClassifier(
        hidden_units=[30, 10], n_classes=3, model_dir="/tmp/iris",
        feature_columns=[tf.feature_column.numeric_column("x", shape=(4,))])
    ```
"""

from __future__ import annotations

from typing import Any, Callable

from trainexec.estimator_engine.canned import arguments
from trainexec.estimator_engine.canned import feature_inputs as inputs
from trainexec.estimator_engine.canned import optimizers
from trainexec.estimator_engine.estimator import Estimator

__all__ = ["DNNClassifier", "DNNEstimator", "DNNRegressor", "dnn_logits", "relu",
           "layer_summary"]

_SUM_OVER_BATCH_SIZE = "sum_over_batch_size"


def relu(features: Any) -> Any:
    """`tf.nn.relu(features)`: the default `activation_fn` (TensorFlow loads on use)."""
    import tensorflow as tf

    return tf.nn.relu(features)


def layer_summary(value: Any, tag: str) -> None:
    """tf.estimator's summaries of one layer's output."""
    import tensorflow as tf

    tf.compat.v1.summary.scalar(f"{tag}/fraction_of_zero_values", tf.math.zero_fraction(value))
    tf.compat.v1.summary.histogram(f"{tag}/activation", value)


def _dense(net: Any, units: int, activation: Callable | None) -> Any:
    import tensorflow as tf

    kernel = tf.compat.v1.get_variable(
        "kernel", shape=[int(net.shape[-1]), units], dtype=tf.float32,
        initializer=tf.compat.v1.glorot_uniform_initializer(), trainable=True)
    bias = tf.compat.v1.get_variable("bias", shape=[units], dtype=tf.float32,
                                     initializer=tf.compat.v1.zeros_initializer(),
                                     trainable=True)
    net = tf.nn.bias_add(tf.linalg.matmul(net, kernel), bias)
    return activation(net) if activation is not None else net


def _batch_norm(net: Any, training: bool, update_ops: list, momentum: float = 0.999,
                epsilon: float = 1e-3) -> Any:
    import tensorflow as tf

    width = [int(net.shape[-1])]
    ones, zeros = tf.compat.v1.ones_initializer(), tf.compat.v1.zeros_initializer()
    gamma = tf.compat.v1.get_variable("gamma", width, initializer=ones)
    beta = tf.compat.v1.get_variable("beta", width, initializer=zeros)
    moving_mean = tf.compat.v1.get_variable("moving_mean", width, initializer=zeros,
                                            trainable=False)
    moving_variance = tf.compat.v1.get_variable("moving_variance", width,
                                                initializer=ones, trainable=False)
    if not training:
        return tf.nn.batch_normalization(net, moving_mean, moving_variance, beta, gamma,
                                         epsilon)
    mean, variance = tf.nn.moments(net, axes=[0])
    for moving, value in ((moving_mean, mean), (moving_variance, variance)):
        update_ops.append(tf.compat.v1.assign_sub(moving, (moving - value) * (1 - momentum)))
    return tf.nn.batch_normalization(net, mean, variance, beta, gamma, epsilon)


def dnn_logits(features: dict, mode: str, units: int, hidden_units: list[int],
               feature_columns: list, activation_fn: Callable | None,
               dropout: float | None, batch_norm: bool) -> tuple[Any, list, list]:
    """(logits, trainable variables, update ops) of the network (module doc), built
    under the variable scope `dnn`."""
    import tensorflow as tf

    from trainexec.estimator_engine.model_spec import ModeKeys

    training = mode == ModeKeys.TRAIN
    update_ops: list = []
    with tf.compat.v1.variable_scope("dnn") as scope:
        net = inputs.dense_input(features, feature_columns)
        for index, width in enumerate(hidden_units):
            name = f"hiddenlayer_{index}"
            with tf.compat.v1.variable_scope(name):
                net = _dense(net, width, activation_fn)
                if dropout is not None and training:
                    net = tf.nn.dropout(net, rate=dropout)
                if batch_norm:
                    with tf.compat.v1.variable_scope(f"batchnorm_{index}"):
                        net = _batch_norm(net, training, update_ops)
            layer_summary(net, name)
        with tf.compat.v1.variable_scope("logits"):
            logits = _dense(net, units, None)
        layer_summary(logits, "logits")
        variables = tf.compat.v1.trainable_variables(scope=scope.name + "/")
    return logits, variables, update_ops


def dnn_model_fn(head: Any, hidden_units: list[int], feature_columns: list,
                 optimizer: Any, activation_fn: Callable | None, dropout: float | None,
                 batch_norm: bool) -> Callable:
    """The `model_fn` of a DNN estimator with `head`."""
    from trainexec.estimator_engine.model_spec import ModeKeys

    def model_fn(features: Any, labels: Any, mode: str) -> Any:
        inputs.check_features(features)
        logits, variables, update_ops = dnn_logits(
            features, mode, head.logits_dimension, hidden_units, feature_columns,
            activation_fn, dropout, batch_norm)
        train_with = None
        if mode == ModeKeys.TRAIN:
            train_with = optimizers.get_optimizer(optimizer)
            optimizers.own_global_step(train_with)
        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, optimizer=train_with,
            logits=logits, trainable_variables=variables, update_ops=update_ops)

    return model_fn


class DNNEstimator(Estimator):
    """A DNN with the given head (tf.estimator's `DNNEstimator`)."""

    def __init__(self, head: Any, hidden_units: Any, feature_columns: Any,
                 model_dir: str | None = None, optimizer: Any = "Adagrad",
                 activation_fn: Callable | None = relu, dropout: float | None = None,
                 config: Any = None, warm_start_from: Any = None,
                 batch_norm: bool = False) -> None:
        """Args as tf.estimator's (module doc): `optimizer` a name, an instance or a
        callable; `warm_start_from` a checkpoint path or `WarmStartSettings`.

        Raises:
            ValueError: for empty or non-positive `hidden_units`, no feature columns or
                one that gives no dense Tensor, an unknown optimizer name or a
                `dropout` outside [0, 1).
        """
        model_fn = dnn_model_fn(
            arguments.check_head(head), arguments.check_hidden_units(hidden_units),
            inputs.check_dense_columns(feature_columns),
            optimizers.check_optimizer(optimizer), activation_fn,
            arguments.check_dropout(dropout), bool(batch_norm))
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class DNNClassifier(DNNEstimator):
    """A DNN classifier (tf.estimator's `DNNClassifier`): binary for `n_classes=2`,
    multi-class above."""

    def __init__(self, hidden_units: Any, feature_columns: Any,
                 model_dir: str | None = None, n_classes: int = 2,
                 weight_column: Any = None, label_vocabulary: Any = None,
                 optimizer: Any = "Adagrad", activation_fn: Callable | None = relu,
                 dropout: float | None = None, config: Any = None,
                 warm_start_from: Any = None, loss_reduction: str = _SUM_OVER_BATCH_SIZE,
                 batch_norm: bool = False) -> None:
        """Args as tf.estimator's; see `DNNEstimator` for what is refused, and
        ValueError for `n_classes` < 2."""
        head = arguments.classification_head(n_classes, weight_column, label_vocabulary,
                                             loss_reduction)
        super().__init__(head, hidden_units, feature_columns, model_dir=model_dir,
                         optimizer=optimizer, activation_fn=activation_fn,
                         dropout=dropout, config=config,
                         warm_start_from=warm_start_from, batch_norm=batch_norm)


class DNNRegressor(DNNEstimator):
    """A DNN regressor (tf.estimator's `DNNRegressor`)."""

    def __init__(self, hidden_units: Any, feature_columns: Any,
                 model_dir: str | None = None, label_dimension: int = 1,
                 weight_column: Any = None, optimizer: Any = "Adagrad",
                 activation_fn: Callable | None = relu, dropout: float | None = None,
                 config: Any = None, warm_start_from: Any = None,
                 loss_reduction: str = _SUM_OVER_BATCH_SIZE,
                 batch_norm: bool = False) -> None:
        """Args as tf.estimator's; see `DNNEstimator` for what is refused."""
        head = arguments.regression_head(label_dimension, weight_column, loss_reduction)
        super().__init__(head, hidden_units, feature_columns, model_dir=model_dir,
                         optimizer=optimizer, activation_fn=activation_fn,
                         dropout=dropout, config=config,
                         warm_start_from=warm_start_from, batch_norm=batch_norm)
