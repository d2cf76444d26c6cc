"""`KerasTrainer`: one Keras train-and-evaluate job, every role.

The same program runs as every task of a TF_CONFIG cluster, or alone; only
TF_CONFIG differs. `KerasTrainer.plan_role` decides this process's role
(`trainexec.keras.strategy.plan_for`, then `role_plan`), and the executor carries
out that `RolePlan` by its action and flags, with the trainer's hooks
(`KerasTrainer.task_hooks`, `trainexec.keras.hooks`):

* local (no TF_CONFIG): trains to `max_steps`, evaluating after new checkpoints
  at most every `eval_spec.throttle_secs` and always at the end
  (`trainexec.evaluation.evaluate_on_save`); returns a `TrainResult`;
* training tasks (chief and workers under MultiWorkerMirroredStrategy, the
  chief under ParameterServerStrategy): train (see `trainexec.keras.fit.training`);
  the chief clears an earlier run's completion record first and records
  completion at the end, so evaluators stop by themselves; each records that it
  finished (`trainexec.records.finished_tasks`); returns None;
* ParameterServerStrategy workers and ps: serve until the chief has finished,
  then return None (`trainexec.tasks.roles`);
* the evaluator: the continuous evaluation loop on `model_dir`; returns
  a `TrainResult` once the run's last checkpoint is evaluated.

Example:
    ```python
    def build_model():
        model = tf.keras.Sequential([tf.keras.layers.Input((4,)),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    trainer = KerasTrainer(build_model, model_dir="/shared/run1",
                           save_checkpoints_steps=20)
    result = trainexec.train_and_evaluate(
        trainer, TrainSpec(train_input_fn, max_steps=200),
        EvalSpec(eval_input_fn, steps=None, throttle_secs=0))
    ```
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Iterable, Sequence

from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.keras.hooks import KerasHooks, KerasSettings
from trainexec.keras.strategy import (STRATEGY_NAMES, StrategyPlan, is_keras_3, plan_for,
                                      visible_gpus)
from trainexec.trainer import (EVALUATE, SERVE, TRAIN, TRAIN_AND_EVALUATE, JobSettings,
                               RolePlan, TrainerBase)

__all__ = ["KerasTrainer", "role_plan"]

logger = logging.getLogger(__name__)

def _positive_int(field: str, value: Any, example: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        none = " or None" if allow_none else ""
        raise ConfigError(f"KerasTrainer `{field}` ({value!r}) must be a positive "
                          f"integer{none}, e.g. {example}")


class KerasTrainer(TrainerBase):
    """A Keras model to train in every role: what `train_and_evaluate` takes for Keras.

    The same program runs in every task; the strategy follows from TF_CONFIG
    (see the module doc).

    Example:
        ```python
        trainer = KerasTrainer(build_model, model_dir="gs://bucket/run",
                               save_checkpoints_steps=100)
        result = trainexec.train_and_evaluate(
            trainer, TrainSpec(train_input_fn, max_steps=1000), EvalSpec(eval_input_fn))
        ```

    Args:
      build_model: called with no arguments, returns a compiled `tf.keras.Model`;
        trainexec calls it inside the scope of the strategy it chose (and once
        more, without a strategy, for the model that evaluates).
      model_dir: where the chief writes checkpoints (`ckpt-<step>`) and records;
        shared by every task of a cluster.
      save_checkpoints_steps: save a checkpoint every this many training steps
        (and at the end).
      callbacks: Keras callbacks for `model.fit` on every training task (on a
        Keras 3 cluster, for trainexec's loop, which calls them as `fit` does:
        `trainexec.keras.fit.distributed_fit`).
      keep_checkpoint_max: how many checkpoints to keep (None keeps all).
      verbose: `model.fit` / `model.evaluate` verbosity (0, 1, 2 or "auto").
      log_step_count_steps: the chief (or a local run) logs its progress every
        this many steps and at `max_steps` (`trainexec.keras.fit.progress`); None
        turns it off.
      summaries: TensorBoard summaries, as an Estimator writes them: training
        scalars under `model_dir` from the chief (at the progress steps: every
        `log_step_count_steps`, 100 when that is None), each evaluation's
        metrics under `model_dir/eval` (`eval_<name>`). False turns them off.
    """

    def __init__(self, build_model: Callable[[], Any], model_dir: str | os.PathLike[str],
                 save_checkpoints_steps: int = 100, callbacks: Sequence[Any] | None = None,
                 keep_checkpoint_max: int | None = 5, verbose: int | str = 0,
                 log_step_count_steps: int | None = 100, summaries: bool = True) -> None:
        if callable(getattr(build_model, "fit", None)):
            raise ConfigError(
                f"KerasTrainer `build_model` is a {type(build_model).__name__} instance: "
                "pass the function that builds and compiles the model (trainexec calls "
                "it inside the scope of the strategy it chooses), not the model itself")
        if not callable(build_model):
            raise ConfigError(
                f"KerasTrainer `build_model` ({build_model!r}) must be a function that "
                "returns a compiled tf.keras.Model (pass the function, do not call it)")
        if not isinstance(model_dir, (str, os.PathLike)) or not os.fspath(model_dir):
            raise ConfigError(
                f"KerasTrainer `model_dir` ({model_dir!r}) must be a non-empty path, the "
                "directory every task of the job shares for checkpoints")
        _positive_int("save_checkpoints_steps", save_checkpoints_steps, "100")
        _positive_int("keep_checkpoint_max", keep_checkpoint_max, "5", allow_none=True)
        _positive_int("log_step_count_steps", log_step_count_steps, "100", allow_none=True)
        if not isinstance(summaries, bool):
            raise ConfigError(f"KerasTrainer `summaries` ({summaries!r}) must be True (write "
                              "TensorBoard summaries under model_dir) or False")
        if verbose not in (0, 1, 2, "auto"):
            raise ConfigError(f"KerasTrainer `verbose` ({verbose!r}) must be 0 (silent), "
                              "1 (progress bar), 2 (one line per epoch) or 'auto'")
        self.build_model = build_model
        self.model_dir = os.fspath(model_dir)
        self.save_checkpoints_steps = save_checkpoints_steps
        self.callbacks = _check_callbacks(callbacks)
        self.keep_checkpoint_max = keep_checkpoint_max
        self.verbose = verbose
        self.log_step_count_steps = log_step_count_steps
        self.summaries = summaries
        self._plans: dict[ClusterConfig, StrategyPlan] = {}

    def __repr__(self) -> str:
        return (f"KerasTrainer({getattr(self.build_model, '__name__', self.build_model)}, "
                f"model_dir={self.model_dir!r}, "
                f"save_checkpoints_steps={self.save_checkpoints_steps})")

    # -- the Trainer protocol (trainexec.trainer) ----------------------------------------
    def strategy_plan(self, cluster: ClusterConfig) -> StrategyPlan:
        """The strategy and action of the task `cluster` describes.

        Raises ConfigError, before anything starts, for a cluster Keras cannot
        train. Decided once per cluster:
        the executor plans the role, then runs it.
        """
        if cluster not in self._plans:
            self._plans[cluster] = plan_for(cluster, keras_3=is_keras_3(), gpus=visible_gpus())
        return self._plans[cluster]

    def plan_role(self, cluster: ClusterConfig) -> RolePlan:
        """What the task does: see the module doc."""
        return role_plan(self.strategy_plan(cluster))

    def task_hooks(self, plan: RolePlan, settings: JobSettings) -> KerasHooks:
        """How this trainer does each step of `plan`'s sequence (`trainexec.tasks`).

        Raises ConfigError, before anything starts, for what Keras cannot do: a plan
        with a start delay, a wait for the chief or a server of its own; Estimator
        hooks; specs without `max_steps`, or without an EvalSpec where it evaluates.
        """
        if settings.train_hooks:
            raise ConfigError(
                "train_hooks are Estimator SessionRunHooks, which KerasTrainer does not "
                "run: pass Keras callbacks as KerasTrainer(callbacks=[...]) instead")
        strategy = self.strategy_plan(settings.cluster)
        _check_keras_can(plan)
        max_steps = _check_specs(settings, plan)
        return KerasHooks(self._keras_settings(), strategy, settings, max_steps)

    def _keras_settings(self) -> KerasSettings:
        """What this trainer was configured with, frozen (what its hooks read)."""
        return KerasSettings(
            build_model=self.build_model, model_dir=self.model_dir,
            save_checkpoints_steps=self.save_checkpoints_steps, callbacks=self.callbacks,
            keep_checkpoint_max=self.keep_checkpoint_max, verbose=self.verbose,
            log_step_count_steps=self.log_step_count_steps, summaries=self.summaries)



def role_plan(plan: StrategyPlan) -> RolePlan:
    """The executor's `RolePlan` for a Keras task's `StrategyPlan` (pure).

    No task waits out a start delay or for the chief (the strategy brings its
    tasks together); only ParameterServerStrategy workers and ps start a
    standard server: the other strategies own theirs.
    """
    task = "local" if plan.is_local else plan.cluster.task_name
    if plan.action == EVALUATE:
        return RolePlan(task, EVALUATE)
    strategy = STRATEGY_NAMES[plan.kind]
    if plan.action == SERVE:
        return RolePlan(task, SERVE, starts_server=True, strategy=strategy)
    return RolePlan(task, TRAIN_AND_EVALUATE if plan.is_local else TRAIN,
                    writes_checkpoints=plan.is_chief, is_local=plan.is_local,
                    strategy=strategy)


def _check_keras_can(plan: RolePlan) -> None:
    """ConfigError for a plan no Keras task carries out: the strategy brings
    the tasks together (no start delay, no wait for the chief), and only a
    serving task starts a standard server (the strategies own theirs)."""
    if plan.start_delay or plan.waits_for_chief or plan.starts_server != (plan.action == SERVE):
        raise ConfigError(f"KerasTrainer cannot carry out this role: {plan.describe()}")


def _check_callbacks(callbacks: Sequence[Any] | None) -> tuple:
    if callbacks is None:
        return ()
    if isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, Iterable):
        raise ConfigError(f"KerasTrainer `callbacks` ({callbacks!r}) must be a list of "
                          "tf.keras.callbacks.Callback instances")
    import tensorflow as tf

    callbacks = tuple(callbacks)
    for callback in callbacks:
        if not isinstance(callback, tf.keras.callbacks.Callback):
            raise ConfigError(
                f"KerasTrainer `callbacks` holds {type(callback).__name__}, which is not a "
                "tf.keras.callbacks.Callback (for checkpoints use save_checkpoints_steps; "
                "trainexec writes them)")
    return callbacks


def _check_specs(settings: JobSettings, plan: RolePlan) -> int:
    """ConfigError for specs KerasTrainer cannot follow (JobSettings has parsed them);
    the TrainSpec's `max_steps`, which it requires."""
    train_spec, eval_spec = settings.train_spec, settings.eval_spec
    max_steps = train_spec.max_steps
    if max_steps is None:
        raise ConfigError(
            "TrainSpec max_steps is None: KerasTrainer trains a fixed number of steps; "
            "set TrainSpec(input_fn, max_steps=...) and repeat the training dataset")
    if train_spec.hooks or train_spec.saving_listeners:
        raise ConfigError(
            "TrainSpec hooks and saving_listeners are Estimator SessionRunHooks and "
            "CheckpointSaverListeners, which KerasTrainer does not run: pass Keras "
            "callbacks as KerasTrainer(callbacks=[...]) instead")
    if plan.action in (EVALUATE, TRAIN_AND_EVALUATE):
        settings.eval_spec_for(plan.task)
    if eval_spec is not None and eval_spec.hooks:
        raise ConfigError("EvalSpec hooks are Estimator SessionRunHooks, which KerasTrainer "
                          "does not run; leave them out (Keras callbacks for evaluation "
                          "are not supported yet)")
    return max_steps
