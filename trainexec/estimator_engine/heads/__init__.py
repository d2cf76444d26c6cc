"""Heads: what sits on a model's logits and makes its `EstimatorSpec` (tf.estimator's
v2 heads, on public TensorFlow only).

One head per module, over one shared core:

* `base`: the `Head` interface; `SingleHead`, `create_estimator_spec` written once;
* `binary_class`: `BinaryClassHead`; `multi_class`: `MultiClassHead`;
  `regression`: `RegressionHead`, `PoissonRegressionHead`, `LogisticRegressionHead`;
  `multi_label`: `MultiLabelHead`; `multi_head`: `MultiHead`;
* the core: `keys` (`MetricKeys`, `PredictionKeys`, signature keys, loss reductions),
  `shapes` (logits, labels and weights checks), `losses` (weights, `loss_fn`,
  reduction), `metrics` and `auc` (the metric objects), `vocabulary` (class names),
  `train_op` (the training op from an optimizer or `train_op_fn`; loss summaries).

Example:
    ```python
    from trainexec.estimator_engine.heads import BinaryClassHead

    def model_fn(features, labels, mode):
        head = BinaryClassHead()
        logits = tf.compat.v1.layers.dense(features["x"], head.logits_dimension)
        return head.create_estimator_spec(
            features=features, mode=mode, logits=logits, labels=labels,
            optimizer=tf.compat.v1.train.AdagradOptimizer(0.1))
    ```
"""

from trainexec.estimator_engine.heads.base import Head
from trainexec.estimator_engine.heads.binary_class import BinaryClassHead
from trainexec.estimator_engine.heads.keys import MetricKeys, PredictionKeys
from trainexec.estimator_engine.heads.multi_class import MultiClassHead
from trainexec.estimator_engine.heads.multi_head import MultiHead
from trainexec.estimator_engine.heads.multi_label import MultiLabelHead
from trainexec.estimator_engine.heads.regression import (LogisticRegressionHead,
                                                         PoissonRegressionHead,
                                                         RegressionHead)

__all__ = ["BinaryClassHead", "Head", "LogisticRegressionHead", "MetricKeys",
           "MultiClassHead", "MultiHead", "MultiLabelHead", "PoissonRegressionHead",
           "PredictionKeys", "RegressionHead"]
