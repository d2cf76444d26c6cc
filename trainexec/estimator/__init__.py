"""`trainexec.estimator`: Estimators on every TensorFlow line trainexec supports.

Change `tf.estimator` to `trainexec.estimator` and nothing else: `Estimator`,
`EstimatorSpec`, `ModeKeys`, `RunConfig`, `WarmStartSettings`, `TrainSpec`, `EvalSpec`,
`train_and_evaluate`, the exporters, `SessionRunHook` and the standard hooks, and
`export` (serving input receivers and export outputs), on trainexec's own `model_fn`
engine (`engine/`: public TensorFlow only, TF 2.15 to 2.21). Names load on first use:
`import trainexec.estimator` loads neither TensorFlow nor `tensorflow_estimator`.

Example:
    ```python
    import trainexec.estimator as estimator   # was: from tensorflow import estimator

    model = estimator.Estimator(model_fn, config=estimator.RunConfig(model_dir="/tmp/m"))
    estimator.train_and_evaluate(model, estimator.TrainSpec(train_input_fn, max_steps=1000),
                                 estimator.EvalSpec(eval_input_fn))
    ```

The package also holds how trainexec runs any Estimator (the native one, and on the
2.15 line `tf.estimator.Estimator`) in each cluster role:

* `availability`: whether `tf.estimator` exists here, and what trainexec needs of one;
* `trainer`: `EstimatorTrainer`, the roles of between-graph replication;
* `run_config_cluster`: the cluster and role the Estimator's `RunConfig` was built with;
* `hooks`: `EstimatorHooks`, how each step of a role's sequence (`trainexec.tasks`) is done;
* `roles/`: the saving listener that evaluates after saves, and the worker's readiness checks;
* `target`: `EstimatorTarget`, an Estimator's checkpoints for the evaluation engine;
* `persistent_eval`: one evaluation graph and session for every checkpoint (tf.estimator's);
* `export`: the public `export` names;
* `compat/`: every private TensorFlow / tf.estimator attribute or patch the tf.estimator
  path relies on, with its inventory (the native engine uses none).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trainexec.lazy_exports import lazy_exports

if TYPE_CHECKING:  # what the names below are, for type checkers and editors (never run)
    # `import X as X` re-exports X under mypy --strict too (`__all__` below is computed)
    from trainexec.estimator import export as export
    from trainexec.estimator.engine.estimator import Estimator as Estimator
    from trainexec.estimator.engine.exporters import BestExporter as BestExporter
    from trainexec.estimator.engine.exporters import FinalExporter as FinalExporter
    from trainexec.estimator.engine.exporters import LatestExporter as LatestExporter
    from trainexec.estimator.engine.model_spec import EstimatorSpec as EstimatorSpec
    from trainexec.estimator.engine.model_spec import ModeKeys as ModeKeys
    from trainexec.estimator.engine.run_config import RunConfig as RunConfig
    from trainexec.estimator.engine.session_hooks import (
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
    from trainexec.estimator.engine.warm_start import WarmStartSettings as WarmStartSettings
    from trainexec.executor import train_and_evaluate as train_and_evaluate
    from trainexec.specs import EvalSpec as EvalSpec
    from trainexec.specs import TrainSpec as TrainSpec

_HOOKS = "trainexec.estimator.engine.session_hooks"
_EXPORTS = {
    "BestExporter": "trainexec.estimator.engine.exporters",
    "CheckpointSaverHook": _HOOKS,
    "CheckpointSaverListener": _HOOKS,
    "Estimator": "trainexec.estimator.engine.estimator",
    "EstimatorSpec": "trainexec.estimator.engine.model_spec",
    "EvalSpec": "trainexec.specs",
    "FeedFnHook": _HOOKS,
    "FinalExporter": "trainexec.estimator.engine.exporters",
    "FinalOpsHook": _HOOKS,
    "GlobalStepWaiterHook": _HOOKS,
    "LatestExporter": "trainexec.estimator.engine.exporters",
    "LoggingTensorHook": _HOOKS,
    "ModeKeys": "trainexec.estimator.engine.model_spec",
    "NanLossDuringTrainingError": _HOOKS,
    "NanTensorHook": _HOOKS,
    "ProfilerHook": _HOOKS,
    "RunConfig": "trainexec.estimator.engine.run_config",
    "SecondOrStepTimer": _HOOKS,
    "SessionRunArgs": _HOOKS,
    "SessionRunContext": _HOOKS,
    "SessionRunHook": _HOOKS,
    "SessionRunValues": _HOOKS,
    "StepCounterHook": _HOOKS,
    "StopAtStepHook": _HOOKS,
    "SummarySaverHook": _HOOKS,
    "TrainSpec": "trainexec.specs",
    "VocabInfo": _HOOKS,
    "WarmStartSettings": "trainexec.estimator.engine.warm_start",
    "train_and_evaluate": "trainexec.executor",
}
__all__ = sorted([*_EXPORTS, "export"])

if not TYPE_CHECKING:  # checkers see the imports above: a misspelt name is an error there
    _getattr, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

    def __getattr__(name: str) -> Any:
        if name == "export":  # the submodule, as tf.estimator.export
            return importlib.import_module(f"{__name__}.export")
        return _getattr(name)
