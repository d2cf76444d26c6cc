"""Canned estimators: tf.estimator's v2 premade estimators on trainexec's engine, with
tf.estimator's names, constructor arguments, defaults and variable names (so their
checkpoints cross lines), on public TensorFlow only.

One family per module, over a shared builder:

* `dnn`: `DNNClassifier`, `DNNRegressor`, `DNNEstimator` (the network, `dnn/...`);
* `linear`: `LinearClassifier`, `LinearRegressor`, `LinearEstimator`
  (`linear/linear_model/...`);
* `dnn_linear_combined`: `DNNLinearCombinedClassifier`, `DNNLinearCombinedRegressor`,
  `DNNLinearCombinedEstimator` (wide and deep: both, each with its optimizer);
* `baseline`: `BaselineClassifier`, `BaselineRegressor`, `BaselineEstimator`;
* the shared builder: `arguments` (the shared constructor checks, the head a
  `*Classifier` or `*Regressor` makes), `feature_inputs` (the feature columns' checks,
  the DNN's dense input, the linear model), `optimizers` (an optimizer by name,
  instance or callable; one update step).

Example:
    ```python
    import tensorflow as tf
    import trainexec.estimator as estimator

    classifier = estimator.DNNClassifier(
        hidden_units=[10, 10], n_classes=3,
        feature_columns=[tf.feature_column.numeric_column("x", shape=(4,))])
    ```
"""

from trainexec.estimator_engine.canned.baseline import (BaselineClassifier,
                                                        BaselineEstimator,
                                                        BaselineRegressor)
from trainexec.estimator_engine.canned.dnn import DNNClassifier, DNNEstimator, DNNRegressor
from trainexec.estimator_engine.canned.dnn_linear_combined import (
    DNNLinearCombinedClassifier, DNNLinearCombinedEstimator, DNNLinearCombinedRegressor)
from trainexec.estimator_engine.canned.linear import (LinearClassifier, LinearEstimator,
                                                      LinearRegressor)

__all__ = ["BaselineClassifier", "BaselineEstimator", "BaselineRegressor",
           "DNNClassifier", "DNNEstimator", "DNNLinearCombinedClassifier",
           "DNNLinearCombinedEstimator", "DNNLinearCombinedRegressor", "DNNRegressor",
           "LinearClassifier", "LinearEstimator", "LinearRegressor"]
