"""User mistakes a type checker must report: each line ending in `# E: <message>` is one.

Checked, never run, by tests/test_typing.py with tests/typing/mypy.ini: mypy must report
exactly the errors written on these lines, by line and message, and nothing else. If a
public annotation regressed to `Any`, its error would vanish and the test fail. Not a
test module (pytest does not collect it).
"""

from __future__ import annotations

from typing import Any

import trainexec
import trainexec.estimator
from trainexec.launch import LocalCluster


def build_model() -> Any: ...
def input_fn() -> Any: ...
def model_fn(features: Any, labels: Any, mode: str) -> Any: ...


def keras_job() -> None:
    trainer = trainexec.KerasTrainer(build_model, model_dir="/tmp/x", save_checkpoints_steps="100")  # E: Argument "save_checkpoints_steps" to "KerasTrainer" has incompatible type "str"; expected "int"
    trainexec.KerasTrainer(build_model(), model_dir=None)  # E: Argument "model_dir" to "KerasTrainer" has incompatible type "None"; expected "str | PathLike[str]"
    train_spec = trainexec.TrainSpec(input_fn, max_steps="10")  # E: Argument "max_steps" to "TrainSpec" has incompatible type "str"; expected "int | None"
    eval_spec = trainexec.EvalSpec(input_fn, throttle_secs="600")  # E: Argument "throttle_secs" to "EvalSpec" has incompatible type "str"; expected "float"
    trainexec.EvalSpec(input_fn, exporters=["latest"])  # E: List item 0 has incompatible type "str"; expected "ExporterProtocol"
    result = trainexec.train_and_evaluate(trainer, train_spec, eval_spec)
    print(result.metrics["loss"])  # E: Item "None" of "TrainResult | None" has no attribute "metrics"
    metrics, exports = trainexec.train_and_evaluate(trainer, train_spec, eval_spec)  # E: "None" object is not iterable
    trainexec.train_and_evaluate(trainer, eval_spec, train_spec)  # E: No overload variant of "train_and_evaluate" matches argument types "KerasTrainer", "EvalSpec", "TrainSpec"
    trainexec.train_and_evaluate(trainer, train_spec, eval_spec, train_hooks=[])  # E: No overload variant of "train_and_evaluate" matches argument types "KerasTrainer", "TrainSpec", "EvalSpec", "list[Never]"
    trainexec.train_and_evaluate(trainer, train_spec, eval_spec, poll_secs="1")  # E: No overload variant of "train_and_evaluate" matches argument types "KerasTrainer", "TrainSpec", "EvalSpec", "str"
    trainexec.KerasTrainr(build_model, model_dir="/tmp/x")  # E: Module has no attribute "KerasTrainr"; maybe "KerasTrainer"?


def estimator_job() -> None:
    estimator = trainexec.estimator.Estimator(model_fn, model_dir=3)  # E: Argument "model_dir" to "Estimator" has incompatible type "int"; expected "str | None"
    trainexec.train_and_evaluate(estimator, "train", "eval")  # E: No overload variant of "train_and_evaluate" matches argument types "Estimator", "str", "str"


def launched(program: str) -> None:
    with LocalCluster(["python", program], workers="2") as cluster:  # E: Argument "workers" to "LocalCluster" has incompatible type "str"; expected "int"
        result = cluster.wait(timeout=600)
    code: int = result.exit_code  # E: Incompatible types in assignment (expression has type "int | None", variable has type "int")
    print(result.failed_tasks)  # E: "JobResult" has no attribute "failed_tasks"; maybe "failed_task"?


def sidecar(checkpoint_dir: str) -> None:
    evaluator = trainexec.SidecarEvaluator(build_model(), None, checkpoint_dir, steps="10")  # E: Argument "steps" to "SidecarEvaluator" has incompatible type "str"; expected "int | None"
    metrics = evaluator.start()
    print(metrics["loss"])  # E: Value of type "dict[str, Any] | None" is not indexable
