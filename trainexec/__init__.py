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

from trainexec.lazy_exports import lazy_exports

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
    "SidecarEvaluator": "trainexec.keras.sidecar",
    "TrainResult": "trainexec.tasks.result",
    "TrainSpec": "trainexec.specs",
    "TrainingCompleteCallback": "trainexec.keras.callbacks",
    "TrainingExecutor": "trainexec.executor",
    "Trainer": "trainexec.trainer",
    "WorkerDelay": "trainexec.cluster.server",
    "read_training_complete": "trainexec.records.completion",
    "record_training_complete": "trainexec.records.completion",
    "train_and_evaluate": "trainexec.executor",
}

__version__ = "0.2.0"  # the only place it is set: setup.py reads it


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
