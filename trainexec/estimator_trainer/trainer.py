"""`EstimatorTrainer`: the `Trainer` for a `tf.estimator.Estimator`.

The roles of `tf.estimator.train_and_evaluate` (between-graph replication, also with a
`trainexec.estimator` RunConfig's `train_distribute` ParameterServerStrategy):

* chief / master: a standard server, no start delay, train (the master also
  evaluates after each checkpoint save); records completion;
* worker: a standard server, a staggered start delay, wait for the chief to
  initialize the model, train;
* ps: a standard server that serves until every training task has finished;
* evaluator: the continuous evaluation loop;
* local (no cluster): train, evaluating after checkpoint saves.

With a `trainexec.estimator` RunConfig whose `train_distribute` is a
MultiWorkerMirroredStrategy, the chief and every worker train in step (a standard server
each, with the strategy's config; no start delay, no waiting for the chief: each
initializes or restores its own copy), the chief writing checkpoints; an evaluator
evaluates them. With either strategy a cluster of workers alone is taken, worker 0
leading it, as tf.estimator took it.

Under Google's own cluster environment (`TF_CONFIG.environment == "google"`)
the training tasks' servers are started by the platform, not here (a ps
starts its own, as tf.estimator's does).

`plan_role` decides this (`role_plan` is the pure part; `plan_task` plans a role
by its task type, for tf.estimator's `run_chief()`...); the executor carries out
the plan with the role sequences of `trainexec.tasks`, each step done as
`task_hooks` (`trainexec.estimator_trainer.hooks.EstimatorHooks`) says for an Estimator.

Example:
    ```python
    trainer = EstimatorTrainer(estimator)
    plan = trainer.plan_role(ClusterConfig.from_env())
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.cluster.config import CHIEF, EVALUATOR, MASTER, PS, WORKER, ClusterConfig
from trainexec.cluster.verdicts import estimator_without_chief
from trainexec.errors import ConfigError
from trainexec.estimator_trainer.availability import check_trainable
from trainexec.estimator_trainer.compat.run_config import distribute_coordinator_mode
from trainexec.estimator_trainer.run_config_cluster import choose_cluster
from trainexec.estimator_trainer.hooks import EstimatorHooks, train_strategy_kind
from trainexec.estimator_engine.strategy_checks import MULTI_WORKER_MIRRORED
from trainexec.trainer import (EVALUATE, SERVE, TRAIN, TRAIN_AND_EVALUATE, JobSettings,
                               RolePlan, TrainerBase)

__all__ = ["EstimatorTrainer", "role_plan"]

_BETWEEN_GRAPH = "between-graph replication"


class EstimatorTrainer(TrainerBase):
    """Runs a `tf.estimator.Estimator` (or any `TrainableModel`) in every role."""

    def __init__(self, estimator: Any) -> None:
        check_trainable(estimator)
        self.estimator = estimator

    @property
    def model_dir(self) -> str:
        return self.estimator.model_dir

    def __repr__(self) -> str:
        return f"EstimatorTrainer({type(self.estimator).__name__})"

    def cluster_for(self, given: ClusterConfig, explicit: bool = False) -> ClusterConfig:
        """The cluster and role this Estimator runs as: its RunConfig's, as in
        tf.estimator, over TF_CONFIG read now (`given`); an explicit `given` (the
        executor's `cluster` argument) over the RunConfig. A disagreement is one
        warning naming both (`trainexec.estimator_trainer.run_config_cluster`)."""
        return choose_cluster(getattr(self.estimator, "config", None), given, explicit)

    def plan_role(self, cluster: ClusterConfig) -> RolePlan:
        """The Estimator role of the task `cluster` describes (see the module doc)."""
        self._check_not_distribute_coordinator(cluster)
        strategy = train_strategy_kind(self.estimator)
        without_chief = (estimator_without_chief(cluster) if strategy is None
                         and cluster.task_type in (CHIEF, MASTER, WORKER, PS) else None)
        if without_chief:
            raise ConfigError(f"TF_CONFIG ({cluster.task_name}): {without_chief} (see "
                              "`trainexec tfconfig`)")
        return role_plan(cluster.task_type, cluster.task_name,
                         google_environment=cluster.is_google_environment,
                         strategy=strategy, leads=cluster.is_chief)

    def task_hooks(self, plan: RolePlan, settings: JobSettings) -> EstimatorHooks:
        """How this Estimator does each step of `plan`'s sequence (`trainexec.tasks`)."""
        del plan  # an Estimator can carry out every plan
        return EstimatorHooks(self.estimator, settings)

    def plan_task(self, task_type: str | None, cluster: ClusterConfig) -> RolePlan:
        """The plan of `task_type`'s role (None: a local run) whatever `cluster` says:
        the executor's `run_chief()`, `run_worker()`... as in `tf.estimator`."""
        task = "local" if task_type is None else f"{task_type}:{cluster.task_index or 0}"
        return role_plan(task_type, task, cluster.is_google_environment,
                         strategy=train_strategy_kind(self.estimator))

    def _check_not_distribute_coordinator(self, cluster: ClusterConfig) -> None:
        config = getattr(self.estimator, "config", None)
        if cluster.is_distributed and distribute_coordinator_mode(config):
            strategy = getattr(config, "train_distribute", None)
            raise ConfigError(
                f"RunConfig(train_distribute={type(strategy).__name__}) with a TF_CONFIG "
                "cluster runs through TensorFlow's distribute coordinator, which trainexec "
                "does not drive: call tf.estimator.train_and_evaluate for it, or leave "
                "train_distribute unset for parameter-server (between-graph) training")


def role_plan(task_type: str | None, task: str, google_environment: bool = False,
              strategy: str | None = None, leads: bool | None = None) -> RolePlan:
    """The `RolePlan` of an Estimator task of `task_type` (None: a local run),
    named `task` in the log (pure; see the module doc). `strategy`: the kind of the
    RunConfig's `train_distribute` (`trainexec.estimator_engine.strategy_checks`), if
    any; `leads`: whether the task writes the checkpoints (default: the chief or master)."""
    if task_type is None:
        return RolePlan(task, TRAIN_AND_EVALUATE, writes_checkpoints=True, is_local=True)
    if task_type == EVALUATOR:
        return RolePlan(task, EVALUATE)
    how = _BETWEEN_GRAPH if strategy is None else f"{strategy}, {_BETWEEN_GRAPH}"
    if task_type == PS:
        return RolePlan(task, SERVE, starts_server=True, strategy=how)
    is_chief = task_type in (CHIEF, MASTER) if leads is None else leads
    if strategy == MULTI_WORKER_MIRRORED:
        return RolePlan(task, TRAIN, starts_server=not google_environment,
                        writes_checkpoints=is_chief,
                        strategy=f"{strategy}, synchronous all-reduce")
    return RolePlan(task, TRAIN_AND_EVALUATE if task_type == MASTER else TRAIN,
                    starts_server=not google_environment,
                    start_delay=task_type == WORKER and not is_chief,
                    waits_for_chief=not is_chief, writes_checkpoints=is_chief,
                    strategy=how)
