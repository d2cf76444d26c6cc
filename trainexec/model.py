"""The small protocol between the executor and the model it trains.

A `tf.estimator.Estimator` satisfies `TrainableModel` as it is; a Keras trainer
can satisfy it too. `EstimatorTarget` adapts such a model to the evaluation
engine's `EvaluationTarget`.

Example::

    check_trainable(estimator)                       # TypeError if it is not one
    target = EstimatorTarget(estimator, eval_spec)
    metrics = target.evaluate(target.latest_checkpoint())
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["EstimatorTarget", "TrainableModel", "check_trainable"]

_REQUIRED = ("config", "model_dir", "train", "evaluate", "latest_checkpoint")


@runtime_checkable
class TrainableModel(Protocol):
    """What the executor uses of an Estimator.

    `config` is a `RunConfig`-like object (task_type, task_id, session_config,
    save_checkpoints_steps, save_checkpoints_secs, and optionally
    experimental_max_worker_delay_secs).
    """

    config: Any
    model_dir: str

    def train(self, input_fn, hooks=None, steps=None, max_steps=None,
              saving_listeners=None) -> Any: ...

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
                 name=None) -> dict: ...

    def latest_checkpoint(self) -> str | None: ...

    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           **kwargs) -> Any: ...


def check_trainable(model: Any) -> None:
    """Raises TypeError naming what `model` lacks to be trained by trainexec."""
    missing = [name for name in _REQUIRED if not hasattr(model, name)]
    if missing:
        raise TypeError(
            "`estimator` must be a tf.estimator.Estimator or another model with "
            f"{', '.join(_REQUIRED)}; {type(model).__name__} lacks {', '.join(missing)}")


class EstimatorTarget:
    """Evaluates an Estimator's checkpoints as an `EvalSpec` says."""

    def __init__(self, estimator: TrainableModel, eval_spec: Any) -> None:
        self._estimator = estimator
        self._eval_spec = eval_spec

    @property
    def model_dir(self) -> str:
        return self._estimator.model_dir

    @property
    def export_subject(self) -> Any:
        return self._estimator

    def latest_checkpoint(self) -> str | None:
        return self._estimator.latest_checkpoint()

    def evaluate(self, checkpoint_path: str) -> dict:
        return self._estimator.evaluate(
            input_fn=self._eval_spec.input_fn, steps=self._eval_spec.steps,
            name=self._eval_spec.name, checkpoint_path=checkpoint_path,
            hooks=self._eval_spec.hooks)
