"""`TrainingExecutor` and `train_and_evaluate`: cluster -> role -> trainer.

The executor reads the cluster (TF_CONFIG), asks the trainer what this task
does (`Trainer.plan_role`), logs that `RolePlan` and carries out that same plan
with the trainer's hooks (`trainexec.tasks.roles.run_role(plan,
trainer.task_hooks(plan, settings), settings)`). The trainer is a
`tf.estimator.Estimator` (wrapped in `EstimatorTrainer`), a `trainexec.KerasTrainer`,
or a `trainexec.trainer.Trainer` of your own (`as_trainer` tells them apart).

A trainer picks the cluster it runs as (its optional `cluster_for`): an Estimator
takes its `RunConfig`'s, as tf.estimator does, warning when TF_CONFIG read at
call time disagrees (`trainexec.estimator_trainer.run_config_cluster`); a KerasTrainer,
and a trainer without `cluster_for`, runs as TF_CONFIG says (`TrainerBase`'s default).

Example (the same script runs as chief, worker, ps, evaluator or alone; only
TF_CONFIG differs):

```python
estimator = tf.estimator.LinearClassifier(feature_columns, model_dir=...)
train_spec = trainexec.TrainSpec(train_input_fn, max_steps=1000)
eval_spec = trainexec.EvalSpec(eval_input_fn, steps=10, throttle_secs=60)
result = trainexec.train_and_evaluate(estimator, train_spec, eval_spec)

trainer = trainexec.KerasTrainer(build_model, model_dir=..., save_checkpoints_steps=20)
result = trainexec.train_and_evaluate(trainer, train_spec, eval_spec)
if result is not None:  # a local run or the evaluator; None in the other roles
    print(result.metrics, result.exports)
```
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, overload

from trainexec.records.storage import check_supported
from trainexec.clock import Clock, SystemClock
from trainexec.cluster.config import CHIEF, EVALUATOR, MASTER, PS, WORKER, ClusterConfig
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.contract.exit_codes import install_exit_hook
from trainexec.contract.exit_deadline import deadline_secs, end_within_at_exit
from trainexec.contract.storage_watch import StorageWatch
from trainexec.cluster.server import WorkerDelay
from trainexec.specs import (EvalSpec, EvalSpecLike, TrainSpec, TrainSpecLike, as_eval_spec,
                             as_train_spec, check_poll_secs, validate_hooks)
from trainexec.tasks.result import TrainResult
from trainexec.tasks.roles import run_role
from trainexec.tasks.hooks import same_model_dir
from trainexec.contract.task_logging import configure_task_logging
from trainexec.trainer import (TRAINER_MEMBERS, JobSettings, RolePlan, Trainer, cluster_for,
                               plan_task)

if TYPE_CHECKING:  # for type checkers only: the trainers import TensorFlow
    from trainexec.estimator_engine.estimator import Estimator
    from trainexec.keras.trainer import KerasTrainer

__all__ = ["EstimatorLike", "TrainingExecutor", "as_trainer", "train_and_evaluate"]

logger = logging.getLogger(__name__)


class EstimatorLike(Protocol):
    """What `train_and_evaluate` takes as an Estimator, for type checkers: a
    `tf.estimator.Estimator` (untyped: any value matches), a `trainexec.estimator.Estimator`
    or another model with an Estimator's `model_dir`, `config`, `train`, `evaluate` and
    `latest_checkpoint` (what `trainexec.estimator_trainer.availability.check_trainable` asks)."""

    @property
    def model_dir(self) -> str: ...
    @property
    def config(self) -> Any: ...
    def train(self, input_fn: Any, *args: Any, **kwargs: Any) -> Any: ...
    def evaluate(self, input_fn: Any, *args: Any, **kwargs: Any) -> Any: ...
    def latest_checkpoint(self) -> str | None: ...


class TrainingExecutor:
    """Runs this process's role of a train-and-evaluate job.

    Args:
      estimator: a `tf.estimator.Estimator` (or any `TrainableModel`), or a
        `trainexec.KerasTrainer` (any `trainexec.trainer.Trainer`).
      train_spec: a trainexec or tf.estimator `TrainSpec`.
      eval_spec: a trainexec or tf.estimator `EvalSpec` (None only for roles
        that do not evaluate).
      train_hooks: extra `SessionRunHook`s for every training task (Estimators).
      continuous_eval_listener: a `ContinuousEvalListener` for the evaluator and
        local runs.

    Keyword Args:
      cluster: the `ClusterConfig` (default: an Estimator's RunConfig's, as in
        tf.estimator; otherwise parsed from TF_CONFIG).
      clock: time source for delays and throttling.
      worker_delay: the worker start-delay rule (`WorkerDelay(0)` disables it).
      poll_secs: how often a waiting task re-checks: the evaluator for a new
        checkpoint, a non-chief worker for the model the chief initializes.
      evaluator_idle_timeout_secs: stop the evaluator after this long without
        a new checkpoint (default: wait as long as training runs).
      server_factory: builds the TensorFlow server (default tf.distribute.Server).
      ps_serves_forever: keep a ps serving until it is killed, as TensorFlow's
        does; by default it exits once every training task has recorded that it
        finished (see `trainexec.records.finished_tasks`).
    """

    def __init__(self, estimator: Trainer | EstimatorLike,
                 train_spec: TrainSpec | TrainSpecLike,
                 eval_spec: EvalSpec | EvalSpecLike | None,
                 train_hooks: Iterable[Any] | None = None,
                 continuous_eval_listener: ContinuousEvalListener | None = None, *,
                 cluster: ClusterConfig | None = None, clock: Clock | None = None,
                 worker_delay: WorkerDelay | None = None, poll_secs: float = 1.0,
                 evaluator_idle_timeout_secs: float | None = None,
                 server_factory: Callable[..., Any] | None = None,
                 ps_serves_forever: bool = False) -> None:
        # A bad TF_CONFIG (read below) ends an uncaught run with the contract's
        # configuration-error code, not Python's 1 (trainexec.contract.exit_codes).
        install_exit_hook("this task", in_cluster=False)
        self._trainer = as_trainer(estimator)
        self._estimator = estimator
        if continuous_eval_listener is not None and not isinstance(
                continuous_eval_listener, ContinuousEvalListener):
            raise TypeError("`continuous_eval_listener` must have type "
                            "`trainexec.ContinuousEvalListener`.")
        check_poll_secs(poll_secs)  # before TF_CONFIG is read: the first error to fix
        given = cluster if cluster is not None else ClusterConfig.from_env()
        cluster = cluster_for(self._trainer, given, explicit=cluster is not None)
        hooks = validate_hooks(train_hooks)
        self._settings = JobSettings(
            train_spec=as_train_spec(train_spec),  # trainexec's specs from here on
            eval_spec=None if eval_spec is None else as_eval_spec(eval_spec),
            cluster=cluster,
            clock=clock or SystemClock(),
            poll_secs=poll_secs,
            idle_timeout_secs=evaluator_idle_timeout_secs,
            listener=continuous_eval_listener or ContinuousEvalListener(),
            train_hooks=hooks,
            worker_delay=worker_delay or WorkerDelay(),
            server_factory=server_factory,
            ps_serves_forever=bool(ps_serves_forever))

    @property
    def estimator(self) -> Trainer | EstimatorLike:
        """The Estimator or trainer this executor runs, as it was passed."""
        return self._estimator

    @property
    def trainer(self) -> Trainer:
        return self._trainer

    @property
    def cluster(self) -> ClusterConfig:
        return self._settings.cluster

    def plan(self) -> RolePlan:
        """What this process's task does (ConfigError if it cannot run)."""
        return self._trainer.plan_role(self._settings.cluster)

    def run(self) -> TrainResult | None:
        """Runs the role TF_CONFIG gives this process.

        Returns a `TrainResult(metrics, exports)` for a local run and for the
        evaluator, and None for the other roles (as tf.estimator does) and where no
        checkpoint was evaluated: `trainexec.tasks.result`.
        """
        configure_task_logging(self.cluster.task_name)
        # From here an uncaught error ends the process with the exit-code contract's
        # code for it (trainexec.contract.exit_codes), which orchestrators' restart rules read.
        install_exit_hook(self.cluster.task_name,
                          in_cluster=self.cluster.role != "local")
        plan = self.plan()
        check_supported(self._trainer.model_dir)
        # No wait on model_dir's storage is for ever (trainexec.contract.storage_watch).
        StorageWatch.for_model_dir(str(self._trainer.model_dir),
                                   self.cluster.task_name).start()
        if self.cluster.role == "local":
            logger.info("Running training and evaluation locally (non-distributed).")
        else:
            logger.info("Running %s of the cluster.", self.cluster.task_name)
        logger.info("Role: %s", plan.describe())
        if self.cluster.role == "local":
            return self._run_plan(plan)
        # A task of a cluster ends within a bound once its role is over, whatever
        # TensorFlow's shutdown waits for (trainexec.contract.exit_deadline).
        bound = deadline_secs()
        try:
            result = self._run_plan(plan)
        except SystemExit as stop:  # preempted: the code it ends with, as Python's
            code = (0 if stop.code is None else int(stop.code)  # exit reads SystemExit
                    if isinstance(stop.code, int) else 1)
            end_within_at_exit(bound, code, self.cluster.task_name)
            raise
        end_within_at_exit(bound, 0, self.cluster.task_name)
        return result

    def _run_plan(self, plan: RolePlan) -> TrainResult | None:
        """`plan` carried out with the trainer's hooks (`trainexec.tasks.roles`)."""
        hooks = self._trainer.task_hooks(plan, self._settings)
        same_model_dir(self._trainer.model_dir, hooks.model_dir, "its task hooks")
        return run_role(plan, hooks, self._settings)

    def _run_task(self, task_type: str | None) -> TrainResult | None:
        """The `run_<role>()` methods of tf.estimator's executor: `task_type`'s role
        whatever TF_CONFIG says, for a trainer that plans it (its optional `plan_task`)."""
        return self._run_plan(plan_task(self._trainer, task_type, self.cluster))

    # The training and serving roles return None, as tf.estimator's do (`run_role`'s
    # result, which is a TrainResult only if the trainer's plan for the role evaluates).
    def run_chief(self) -> TrainResult | None:
        """Trains as the chief and records when training is done."""
        return self._run_task(CHIEF)

    def run_worker(self) -> TrainResult | None:
        """Trains as a worker after its staggered start delay."""
        return self._run_task(WORKER)

    def run_master(self) -> TrainResult | None:
        """Trains as the master, evaluating after checkpoint saves."""
        return self._run_task(MASTER)

    def run_ps(self) -> TrainResult | None:
        """Serves variables as a parameter server until every training task has
        finished (until killed with `ps_serves_forever=True`)."""
        return self._run_task(PS)

    def run_evaluator(self) -> TrainResult | None:
        """Evaluates new checkpoints until the run's last one is evaluated."""
        return self._run_task(EVALUATOR)

    def run_local(self) -> TrainResult | None:
        """Trains and evaluates in this process; returns a `TrainResult`."""
        return self._run_task(None)


# One signature per kind of trainer, for type checkers: a KerasTrainer, an Estimator
# (trainexec.estimator's, tf.estimator's or a look-alike), or another Trainer; each with
# TrainingExecutor's keyword options, `train_hooks` (SessionRunHooks) for Estimators only.
@overload
def train_and_evaluate(
        estimator: KerasTrainer, train_spec: TrainSpec | TrainSpecLike,
        eval_spec: EvalSpec | EvalSpecLike, *,
        continuous_eval_listener: ContinuousEvalListener | None = ...,
        cluster: ClusterConfig | None = ..., clock: Clock | None = ...,
        worker_delay: WorkerDelay | None = ..., poll_secs: float = ...,
        evaluator_idle_timeout_secs: float | None = ...,
        server_factory: Callable[..., Any] | None = ...,
        ps_serves_forever: bool = ...) -> TrainResult | None: ...


@overload
def train_and_evaluate(
        estimator: Estimator | EstimatorLike, train_spec: TrainSpec | TrainSpecLike,
        eval_spec: EvalSpec | EvalSpecLike, *, train_hooks: Iterable[Any] | None = ...,
        continuous_eval_listener: ContinuousEvalListener | None = ...,
        cluster: ClusterConfig | None = ..., clock: Clock | None = ...,
        worker_delay: WorkerDelay | None = ..., poll_secs: float = ...,
        evaluator_idle_timeout_secs: float | None = ...,
        server_factory: Callable[..., Any] | None = ...,
        ps_serves_forever: bool = ...) -> TrainResult | None: ...


@overload
def train_and_evaluate(
        estimator: Trainer, train_spec: TrainSpec | TrainSpecLike,
        eval_spec: EvalSpec | EvalSpecLike, *,
        continuous_eval_listener: ContinuousEvalListener | None = ...,
        cluster: ClusterConfig | None = ..., clock: Clock | None = ...,
        worker_delay: WorkerDelay | None = ..., poll_secs: float = ...,
        evaluator_idle_timeout_secs: float | None = ...,
        server_factory: Callable[..., Any] | None = ...,
        ps_serves_forever: bool = ...) -> TrainResult | None: ...


def train_and_evaluate(estimator: Any, train_spec: Any, eval_spec: Any,
                       **options: Any) -> TrainResult | None:
    """Drop-in for `tf.estimator.train_and_evaluate`, for Estimators, for
    `trainexec.KerasTrainer` and for a `trainexec.trainer.Trainer` of your own.

    Same arguments and return value, for every trainer: a `TrainResult(metrics,
    exports)` pair locally and on the evaluator, None in the other roles (as
    tf.estimator). A program that runs in every role reads it as
    `if result is not None: result.metrics[...]` (`trainexec.tasks.result`).
    `options` are the keyword-only options of `TrainingExecutor` (and its
    `continuous_eval_listener`, and `train_hooks` for an Estimator).
    """
    eval_spec = as_eval_spec(eval_spec)  # fail fast on a bad eval spec
    executor = TrainingExecutor(estimator, train_spec, eval_spec, **options)
    return executor.run()


def as_trainer(model: Any) -> Trainer:
    """`model` itself if it is a `Trainer` (`model_dir`, `plan_role` and `task_hooks`),
    else an `EstimatorTrainer` around it (an Estimator).

    Raises TypeError for something that is neither, naming what it lacks to be
    either.
    """
    if isinstance(model, Trainer):
        return model
    from trainexec.estimator_trainer.availability import (ESTIMATOR_MEMBERS,
                                                          estimator_problem)
    from trainexec.estimator_trainer.trainer import EstimatorTrainer

    not_estimator = [name for name in ESTIMATOR_MEMBERS if not hasattr(model, name)]
    if not not_estimator:
        return EstimatorTrainer(model)
    not_trainer = [name for name in TRAINER_MEMBERS if not hasattr(model, name)]
    message = (
        f"`estimator` must be a trainer ({', '.join(TRAINER_MEMBERS)}: "
        f"trainexec.trainer.Trainer) or a tf.estimator.Estimator (or another model with "
        f"{', '.join(ESTIMATOR_MEMBERS)}); {type(model).__name__} is neither: as a trainer "
        f"it lacks {', '.join(not_trainer)}; as an Estimator it lacks "
        f"{', '.join(not_estimator)}")
    # Without a member only trainers have, it was meant as an Estimator: say so if
    # tf.estimator is not available here.
    if all(name in not_trainer for name in TRAINER_MEMBERS if name not in ESTIMATOR_MEMBERS):
        problem = estimator_problem()
        if problem is not None:
            message += f". Note: {problem}"
    raise TypeError(message)
