"""trainexec: run TensorFlow training as a cluster.

The public surface. Names are imported on first use, so `import trainexec` (and
the `trainexec` command) stays fast and TensorFlow loads only when needed.

Example:
    ```python
    import trainexec
    result = trainexec.train_and_evaluate(estimator, train_spec, eval_spec)

    trainer = trainexec.KerasTrainer(build_model, model_dir=..., save_checkpoints_steps=20)
    result = trainexec.train_and_evaluate(trainer, train_spec, eval_spec)
    if result is not None:  # a local run or the evaluator; None in the other roles
        print(result.metrics["loss"], result.exports)
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainexec.lazy_exports import lazy_exports

if TYPE_CHECKING:  # what the names below are, for type checkers and editors (never run)
    from trainexec.cluster.config import ClusterConfig
    from trainexec.cluster.server import WorkerDelay
    from trainexec.errors import ConfigError
    from trainexec.evaluation.lease import EvaluatorAlreadyRunning
    from trainexec.evaluation.listeners import ContinuousEvalListener
    from trainexec.evaluation.one_pass import EvalResult, EvalStatus
    from trainexec.executor import TrainingExecutor, train_and_evaluate
    from trainexec.keras.fit.callbacks import TrainingCompleteCallback
    from trainexec.keras.evaluate.sidecar import SidecarEvaluator
    from trainexec.keras.trainer import KerasTrainer
    from trainexec.launch.cluster import LocalCluster
    from trainexec.records.completion import read_training_complete, record_training_complete
    from trainexec.records.layout import COMPLETION_FILE
    from trainexec.specs import EvalSpec, TrainSpec
    from trainexec.tasks.result import TrainResult
    from trainexec.trainer import Trainer

__all__ = [
    "COMPLETION_FILE",
    "ClusterConfig",
    "ConfigError",
    "ContinuousEvalListener",
    "EvalResult",
    "EvalSpec",
    "EvalStatus",
    "EvaluatorAlreadyRunning",
    "KerasTrainer",
    "LocalCluster",
    "SidecarEvaluator",
    "TrainResult",
    "TrainSpec",
    "TrainingCompleteCallback",
    "TrainingExecutor",
    "Trainer",
    "WorkerDelay",
    "read_training_complete",
    "record_training_complete",
    "train_and_evaluate",
]

_EXPORTS = {
    "COMPLETION_FILE": "trainexec.records.completion",
    "ClusterConfig": "trainexec.cluster.config",
    "ConfigError": "trainexec.errors",
    "ContinuousEvalListener": "trainexec.evaluation.loop",
    "EvalResult": "trainexec.evaluation.one_pass",
    "EvalSpec": "trainexec.specs",
    "EvalStatus": "trainexec.evaluation.one_pass",
    "EvaluatorAlreadyRunning": "trainexec.evaluation.lease",
    "KerasTrainer": "trainexec.keras.trainer",
    "LocalCluster": "trainexec.launch",
    "SidecarEvaluator": "trainexec.keras.evaluate.sidecar",
    "TrainResult": "trainexec.tasks.result",
    "TrainSpec": "trainexec.specs",
    "TrainingCompleteCallback": "trainexec.keras.fit.callbacks",
    "TrainingExecutor": "trainexec.executor",
    "Trainer": "trainexec.trainer",
    "WorkerDelay": "trainexec.cluster.server",
    "read_training_complete": "trainexec.records.completion",
    "record_training_complete": "trainexec.records.completion",
    "train_and_evaluate": "trainexec.executor",
}

__version__ = "0.3.0"  # the only place it is set: setup.py reads it


if not TYPE_CHECKING:  # checkers see the imports above: a misspelt name is an error there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
