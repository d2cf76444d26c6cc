"""`trainexec.estimator`: Estimators on every TensorFlow line trainexec supports.

Change `tf.estimator` to `trainexec.estimator` and nothing else: `Estimator`,
`EstimatorSpec`, `ModeKeys`, `RunConfig` (and `TaskType`, its task-type names),
`WarmStartSettings`, `TrainSpec`, `EvalSpec`, `train_and_evaluate`, the exporters,
`SessionRunHook` and the standard hooks, the canned estimators (`DNNClassifier`,
`DNNRegressor`, `DNNEstimator`, `LinearClassifier`, `LinearRegressor`,
`LinearEstimator`, `DNNLinearCombinedClassifier` / `Regressor` / `Estimator`,
`BaselineClassifier` / `Regressor` / `Estimator`), the heads (`BinaryClassHead`,
`MultiClassHead`, `MultiLabelHead`, `RegressionHead`, `PoissonRegressionHead`,
`LogisticRegressionHead`, `MultiHead`, and `Head` to write one), `add_metrics`, `export` (serving input receivers and export
outputs), `inputs` (`numpy_input_fn`, `pandas_input_fn`) and `experimental`
(`call_logit_fn`, `build_raw_supervised_input_receiver_fn`), on trainexec's own
`model_fn` engine (`trainexec.estimator_engine`: public TensorFlow only, TF 2.15 to
2.21). Names load on first use: `import trainexec.estimator` loads neither TensorFlow nor
`tensorflow_estimator`.

Example:
    ```python
    import trainexec.estimator as estimator   # was: from tensorflow import estimator

    model = estimator.Estimator(model_fn, config=estimator.RunConfig(model_dir="/tmp/m"))
    estimator.train_and_evaluate(model, estimator.TrainSpec(train_input_fn, max_steps=1000),
                                 estimator.EvalSpec(eval_input_fn))
    ```

This package is the public face only (this module, `export`, `inputs` and
`experimental`): it re-exports, and sits above everything it names. What it names lives below it:

* `trainexec.estimator_engine`: the native `model_fn` engine (`Estimator`, `RunConfig`,
  `EstimatorSpec`, the exporters, the hooks, the canned estimators, the heads, `add_metrics`, `export`'s
  receivers and outputs, `inputs`' input functions);
* `trainexec.estimator_trainer`: how trainexec runs any Estimator (the native one, and on
  the 2.15 line `tf.estimator.Estimator`) in each cluster role (`EstimatorTrainer`);
* `trainexec.executor`: `train_and_evaluate`; `trainexec.specs`: `TrainSpec`, `EvalSpec`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trainexec.lazy_exports import lazy_exports

if TYPE_CHECKING:  # what the names below are, for type checkers and editors (never run)
    # `import X as X` re-exports X under mypy --strict too (`__all__` below is computed)
    from trainexec.estimator import experimental as experimental
    from trainexec.estimator import export as export
    from trainexec.estimator import inputs as inputs
    from trainexec.estimator_engine.canned import BaselineClassifier as BaselineClassifier
    from trainexec.estimator_engine.canned import BaselineEstimator as BaselineEstimator
    from trainexec.estimator_engine.canned import BaselineRegressor as BaselineRegressor
    from trainexec.estimator_engine.canned import DNNClassifier as DNNClassifier
    from trainexec.estimator_engine.canned import DNNEstimator as DNNEstimator
    from trainexec.estimator_engine.canned import DNNLinearCombinedClassifier as DNNLinearCombinedClassifier
    from trainexec.estimator_engine.canned import DNNLinearCombinedEstimator as DNNLinearCombinedEstimator
    from trainexec.estimator_engine.canned import DNNLinearCombinedRegressor as DNNLinearCombinedRegressor
    from trainexec.estimator_engine.canned import DNNRegressor as DNNRegressor
    from trainexec.estimator_engine.canned import LinearClassifier as LinearClassifier
    from trainexec.estimator_engine.canned import LinearEstimator as LinearEstimator
    from trainexec.estimator_engine.canned import LinearRegressor as LinearRegressor
    from trainexec.estimator_engine.estimator import Estimator as Estimator
    from trainexec.estimator_engine.exporters import BestExporter as BestExporter
    from trainexec.estimator_engine.exporters import FinalExporter as FinalExporter
    from trainexec.estimator_engine.exporters import LatestExporter as LatestExporter
    from trainexec.estimator_engine.extenders import add_metrics as add_metrics
    from trainexec.estimator_engine.heads import BinaryClassHead as BinaryClassHead
    from trainexec.estimator_engine.heads import Head as Head
    from trainexec.estimator_engine.heads import (
        LogisticRegressionHead as LogisticRegressionHead)
    from trainexec.estimator_engine.heads import MultiClassHead as MultiClassHead
    from trainexec.estimator_engine.heads import MultiHead as MultiHead
    from trainexec.estimator_engine.heads import MultiLabelHead as MultiLabelHead
    from trainexec.estimator_engine.heads import (
        PoissonRegressionHead as PoissonRegressionHead)
    from trainexec.estimator_engine.heads import RegressionHead as RegressionHead
    from trainexec.estimator_engine.model_spec import EstimatorSpec as EstimatorSpec
    from trainexec.estimator_engine.model_spec import ModeKeys as ModeKeys
    from trainexec.estimator_engine.run_config import RunConfig as RunConfig
    from trainexec.estimator_engine.session_hooks import (
        CheckpointSaverHook as CheckpointSaverHook,
        CheckpointSaverListener as CheckpointSaverListener, FeedFnHook as FeedFnHook,
        FinalOpsHook as FinalOpsHook, GlobalStepWaiterHook as GlobalStepWaiterHook,
        LoggingTensorHook as LoggingTensorHook,
        NanLossDuringTrainingError as NanLossDuringTrainingError,
        NanTensorHook as NanTensorHook, ProfilerHook as ProfilerHook,
        SecondOrStepTimer as SecondOrStepTimer, SessionRunArgs as SessionRunArgs,
        SessionRunContext as SessionRunContext, SessionRunHook as SessionRunHook,
        SessionRunValues as SessionRunValues, StepCounterHook as StepCounterHook,
        StopAtStepHook as StopAtStepHook, SummarySaverHook as SummarySaverHook,
        VocabInfo as VocabInfo)
    from trainexec.estimator_engine.warm_start import WarmStartSettings as WarmStartSettings
    from trainexec.executor import train_and_evaluate as train_and_evaluate
    from trainexec.specs import EvalSpec as EvalSpec
    from trainexec.specs import TrainSpec as TrainSpec
    from trainexec.task_types import TaskType as TaskType

_HOOKS = "trainexec.estimator_engine.session_hooks"
_HEADS = "trainexec.estimator_engine.heads"
_CANNED = "trainexec.estimator_engine.canned"
_EXPORTS = {
    "BaselineClassifier": _CANNED,
    "BaselineEstimator": _CANNED,
    "BaselineRegressor": _CANNED,
    "DNNClassifier": _CANNED,
    "DNNEstimator": _CANNED,
    "DNNLinearCombinedClassifier": _CANNED,
    "DNNLinearCombinedEstimator": _CANNED,
    "DNNLinearCombinedRegressor": _CANNED,
    "DNNRegressor": _CANNED,
    "LinearClassifier": _CANNED,
    "LinearEstimator": _CANNED,
    "LinearRegressor": _CANNED,
    "BestExporter": "trainexec.estimator_engine.exporters",
    "BinaryClassHead": _HEADS,
    "CheckpointSaverHook": _HOOKS,
    "CheckpointSaverListener": _HOOKS,
    "Estimator": "trainexec.estimator_engine.estimator",
    "EstimatorSpec": "trainexec.estimator_engine.model_spec",
    "EvalSpec": "trainexec.specs",
    "FeedFnHook": _HOOKS,
    "FinalExporter": "trainexec.estimator_engine.exporters",
    "FinalOpsHook": _HOOKS,
    "GlobalStepWaiterHook": _HOOKS,
    "Head": _HEADS,
    "LatestExporter": "trainexec.estimator_engine.exporters",
    "LoggingTensorHook": _HOOKS,
    "LogisticRegressionHead": _HEADS,
    "ModeKeys": "trainexec.estimator_engine.model_spec",
    "MultiClassHead": _HEADS,
    "MultiHead": _HEADS,
    "MultiLabelHead": _HEADS,
    "NanLossDuringTrainingError": _HOOKS,
    "NanTensorHook": _HOOKS,
    "PoissonRegressionHead": _HEADS,
    "ProfilerHook": _HOOKS,
    "RegressionHead": _HEADS,
    "RunConfig": "trainexec.estimator_engine.run_config",
    "SecondOrStepTimer": _HOOKS,
    "SessionRunArgs": _HOOKS,
    "SessionRunContext": _HOOKS,
    "SessionRunHook": _HOOKS,
    "SessionRunValues": _HOOKS,
    "StepCounterHook": _HOOKS,
    "StopAtStepHook": _HOOKS,
    "SummarySaverHook": _HOOKS,
    "TaskType": "trainexec.task_types",
    "TrainSpec": "trainexec.specs",
    "VocabInfo": _HOOKS,
    "WarmStartSettings": "trainexec.estimator_engine.warm_start",
    "add_metrics": "trainexec.estimator_engine.extenders",
    "train_and_evaluate": "trainexec.executor",
}
_SUBMODULES = ("experimental", "export", "inputs")  # as tf.estimator's submodules
__all__ = sorted([*_EXPORTS, *_SUBMODULES])

if not TYPE_CHECKING:  # checkers see the imports above: a misspelt name is an error there
    _getattr, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

    def __getattr__(name: str) -> Any:
        if name in _SUBMODULES:
            return importlib.import_module(f"{__name__}.{name}")
        return _getattr(name)
