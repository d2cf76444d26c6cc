"""The `Trainer` protocol: what each role of a job does for one kind of model.

The executor knows roles (TF_CONFIG -> `ClusterConfig`); a trainer knows its
model. For this process's task a trainer returns a `RolePlan`: whether the task
starts a standard TensorFlow server, waits out a start delay, waits for the
chief, writes the run's checkpoints, runs alone or as a task of a cluster, and
whether it trains, serves until training is over, evaluates, or trains and
evaluates after its checkpoint saves. The executor logs the plan, asks the trainer
for its hooks for that plan and the job's settings (`task_hooks`, a
`trainexec.tasks.hooks.TrainerHooks`) and carries the plan out with them
(`trainexec.tasks.roles.run_role`): the role's steps follow the plan's action and
flags, and nothing decides the role again from the task type.

`RolePlan`, `TaskAction` and `JobSettings` are defined with the sequences that read them
(`trainexec.tasks.plan`) and re-exported here, so this protocol sits above `trainexec.tasks`.

A trainer is three members (`Trainer`); two more are optional (`cluster_for`,
`plan_task`): the executor asks for them through `cluster_for()` and `plan_task()` here,
which use `TrainerBase`'s defaults for a trainer without them.

Two trainers ship with trainexec: `EstimatorTrainer` (a `tf.estimator`
Estimator, `trainexec.estimator_trainer.trainer`) and `KerasTrainer`
(`trainexec.keras.trainer`).

Example:
    ```python
    trainer = KerasTrainer(...)   # or EstimatorTrainer(estimator)
    plan = trainer.plan_role(cluster)
    logger.info("%s", plan.describe())
    result = trainexec.tasks.roles.run_role(plan, trainer.task_hooks(plan, settings),
                                            settings)
    ```
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.tasks.hooks import TrainerHooks
# What a task does and the job's settings live with the role sequences that read them
# (`trainexec.tasks.plan`); this module, the trainers' protocol, re-exports them.
from trainexec.tasks.plan import (COORDINATE, EVALUATE, SERVE, TRAIN, TRAIN_AND_EVALUATE,
                                  JobSettings, RolePlan, TaskAction)

__all__ = ["COORDINATE", "EVALUATE", "SERVE", "TRAIN", "TRAINER_MEMBERS", "TRAIN_AND_EVALUATE",
           "ChoosesCluster", "JobSettings", "PlansTasks", "RolePlan", "TaskAction", "Trainer",
           "TrainerBase", "cluster_for", "plan_task"]

# What makes a trainer (`Trainer`), by name: what `trainexec.executor.as_trainer` says a
# model lacks.
TRAINER_MEMBERS = ("model_dir", "plan_role", "task_hooks")


@runtime_checkable
class Trainer(Protocol):
    """A kind of model the executor can run in every role: three members.

    `model_dir`, `plan_role` and `task_hooks` make a trainer, whatever its base class.
    Two members are optional: `cluster_for` (the cluster it runs as; default: the one
    TF_CONFIG, or the executor's `cluster` argument, gives) and `plan_task` (the plan of
    a role by its task type, for `TrainingExecutor.run_chief()`...; default: a
    ConfigError, the trainer plays the role TF_CONFIG gives it). The executor uses those
    defaults for a trainer without them; `TrainerBase` has them too, to subclass when
    overriding one.

    Example:
        ```python
        class MyTrainer:                  # no base class needed
            model_dir = "/tmp/run"

            def plan_role(self, cluster):
                return RolePlan("local", TRAIN_AND_EVALUATE, writes_checkpoints=True,
                                is_local=True)

            def task_hooks(self, plan, settings):
                return MyHooks()          # a trainexec.tasks.hooks.TrainerHooks

        trainexec.train_and_evaluate(MyTrainer(), train_spec, eval_spec)
        ```
    """

    @property
    def model_dir(self) -> str:  # read-only here: an attribute or a property qualifies
        ...

    def plan_role(self, cluster: ClusterConfig) -> RolePlan:
        """What the task `cluster` describes does; ConfigError if it cannot run."""
        ...

    def task_hooks(self, plan: RolePlan, settings: JobSettings) -> TrainerHooks:
        """How this trainer does each step of `plan`'s sequence; ConfigError, before
        anything starts, for what it cannot do with these settings."""
        ...


@runtime_checkable
class ChoosesCluster(Protocol):
    """A trainer's optional `cluster_for` (see `Trainer`)."""

    def cluster_for(self, given: ClusterConfig, explicit: bool = False) -> ClusterConfig:
        """The cluster this trainer runs as, given TF_CONFIG's (or the executor's
        explicit `cluster`): `given` (TrainerBase), or e.g. an Estimator's RunConfig's."""
        ...


@runtime_checkable
class PlansTasks(Protocol):
    """A trainer's optional `plan_task` (see `Trainer`)."""

    def plan_task(self, task_type: str | None, cluster: ClusterConfig) -> RolePlan:
        """The plan of `task_type`'s role (None: a local run) whatever `cluster` says:
        tf.estimator's `run_chief()`, `run_worker()`...; ConfigError for a trainer that
        plays only the role TF_CONFIG gives it (TrainerBase)."""
        ...


def cluster_for(trainer: Trainer, given: ClusterConfig, explicit: bool = False
                ) -> ClusterConfig:
    """The cluster `trainer` runs as: its own `cluster_for`'s, else `given` as it is."""
    if isinstance(trainer, ChoosesCluster):
        return trainer.cluster_for(given, explicit)
    return given


def plan_task(trainer: Trainer, task_type: str | None, cluster: ClusterConfig) -> RolePlan:
    """`trainer`'s plan of `task_type`'s role: its own `plan_task`'s, else ConfigError
    (it plays the role TF_CONFIG gives it)."""
    if isinstance(trainer, PlansTasks):
        return trainer.plan_task(task_type, cluster)
    raise _plays_its_role_only(trainer, cluster)


def _plays_its_role_only(trainer: object, cluster: ClusterConfig) -> ConfigError:
    return ConfigError(
        f"{type(trainer).__name__} plays the role TF_CONFIG gives it: call "
        f"TrainingExecutor.run() (TF_CONFIG says {cluster.task_name})")


class TrainerBase:
    """The defaults of a `Trainer`'s two optional members, for a trainer that overrides
    one of them (the executor uses the same defaults for a trainer without them)."""

    def cluster_for(self, given: ClusterConfig, explicit: bool = False) -> ClusterConfig:
        """TF_CONFIG's cluster (or the executor's explicit one), as given."""
        del explicit
        return given

    def plan_task(self, task_type: str | None, cluster: ClusterConfig) -> RolePlan:
        """ConfigError: this trainer plays the role TF_CONFIG gives it."""
        del task_type
        raise _plays_its_role_only(self, cluster)
