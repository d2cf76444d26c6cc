"""`EstimatorTrainer`: the `Trainer` for a `tf.estimator.Estimator`.

The roles of `tf.estimator.train_and_evaluate` (between-graph replication):

* chief / master: a standard server, no start delay, train (the master also
  evaluates after each checkpoint save); records completion;
* worker: a standard server, a staggered start delay, wait for the chief to
  initialize the model, train;
* ps: a standard server that serves until every training task has finished;
* evaluator: the continuous evaluation loop;
* local (no cluster): train, evaluating after checkpoint saves.

Under Google's own cluster environment (`TF_CONFIG.environment == "google"`)
the servers are started by the platform, not here.

Example::

    trainer = EstimatorTrainer(estimator)
    plan = trainer.plan_role(ClusterConfig.from_env())
"""

from __future__ import annotations

from typing import Any

from trainexec.cluster import CHIEF, EVALUATOR, MASTER, PS, WORKER, ClusterConfig
from trainexec.errors import ConfigError
from trainexec.estimator.availability import check_trainable
from trainexec.estimator.roles import chief, evaluator, local, master, ps, worker
from trainexec.estimator.roles.context import TaskContext
from trainexec.trainer import (EVALUATE, SERVE, TRAIN, TRAIN_AND_EVALUATE, JobSettings,
                               RolePlan)

__all__ = ["EstimatorTrainer"]


_RUNNERS = {CHIEF: chief.run, WORKER: worker.run, MASTER: master.run, PS: ps.run,
            EVALUATOR: evaluator.run}
_BETWEEN_GRAPH = "between-graph replication"


class EstimatorTrainer:
    """Runs a `tf.estimator.Estimator` (or any `TrainableModel`) in every role."""

    def __init__(self, estimator: Any) -> None:
        check_trainable(estimator)
        self.estimator = estimator

    @property
    def model_dir(self) -> str:
        return self.estimator.model_dir

    def __repr__(self) -> str:
        return f"EstimatorTrainer({type(self.estimator).__name__})"

    def plan_role(self, cluster: ClusterConfig) -> RolePlan:
        """The Estimator role of the task `cluster` describes (see the module doc)."""
        self._check_not_distribute_coordinator(cluster)
        self._check_matches_run_config(cluster)
        if cluster.role == "local":
            return RolePlan("local", TRAIN_AND_EVALUATE, writes_checkpoints=True)
        task_type = cluster.task_type
        if task_type in (CHIEF, MASTER, WORKER, PS) and not cluster.has_chief:
            empty = [f"cluster.{job} is an empty list" for job in (CHIEF, MASTER)
                     if job in cluster.empty_jobs]
            raise ConfigError(
                "TF_CONFIG cluster has no \"chief\" (or \"master\") job"
                + (f" ({empty[0]})" if empty else "") + ": Estimator "
                "training needs exactly one chief to save checkpoints; add "
                '"chief": ["host:port"] to cluster (a TFJob Chief replica spec with '
                "replicas: 1). A cluster of workers only suits Keras "
                "MultiWorkerMirroredStrategy instead (see `trainexec tfconfig`)")
        if task_type == EVALUATOR:
            return RolePlan(cluster.task_name, EVALUATE)
        server = not cluster.is_google_environment
        if task_type == PS:
            return RolePlan(cluster.task_name, SERVE, starts_server=server,
                            strategy=_BETWEEN_GRAPH)
        is_chief = task_type in (CHIEF, MASTER)
        return RolePlan(cluster.task_name,
                        TRAIN_AND_EVALUATE if task_type == MASTER else TRAIN,
                        starts_server=server, start_delay=task_type == WORKER,
                        waits_for_chief=not is_chief, writes_checkpoints=is_chief,
                        strategy=_BETWEEN_GRAPH)

    def run_role(self, plan: RolePlan, settings: JobSettings) -> Any:
        """Runs the role; `(metrics, export_results)` locally and on the evaluator."""
        return self.run_task(settings.cluster.task_type, settings)

    def run_task(self, task_type: str, settings: JobSettings) -> Any:
        """Runs `task_type`'s role whatever TF_CONFIG says (the executor's
        `run_chief()`, `run_worker()`... as in `tf.estimator`)."""
        if task_type is None:
            return local.run(self.context(settings))
        return _RUNNERS[task_type](self.context(settings))

    def context(self, settings: JobSettings) -> TaskContext:
        return TaskContext(
            estimator=self.estimator, train_spec=settings.train_spec,
            eval_spec=settings.eval_spec, train_hooks=settings.train_hooks,
            listener=settings.listener, cluster=settings.cluster, clock=settings.clock,
            worker_delay=settings.worker_delay, poll_secs=settings.poll_secs,
            idle_timeout_secs=settings.idle_timeout_secs,
            server_factory=settings.server_factory,
            ps_serves_forever=settings.ps_serves_forever)

    def _check_not_distribute_coordinator(self, cluster: ClusterConfig) -> None:
        config = getattr(self.estimator, "config", None)
        if cluster.is_distributed and getattr(config, "_distribute_coordinator_mode", None):
            strategy = getattr(config, "train_distribute", None)
            raise ConfigError(
                f"RunConfig(train_distribute={type(strategy).__name__}) with a TF_CONFIG "
                "cluster runs through TensorFlow's distribute coordinator, which trainexec "
                "does not drive: call tf.estimator.train_and_evaluate for it, or leave "
                "train_distribute unset for parameter-server (between-graph) training")

    def _check_matches_run_config(self, cluster: ClusterConfig) -> None:
        config = getattr(self.estimator, "config", None)
        task_type = getattr(config, "task_type", None)
        if task_type in (None, "worker") and cluster.task_type is None:
            return  # RunConfig's default for a local run is "worker"
        if task_type is not None and (task_type != cluster.task_type or getattr(
                config, "task_id", cluster.task_index) != cluster.task_index):
            raise ConfigError(
                f"estimator.config is for task {task_type}:{getattr(config, 'task_id', '?')} "
                f"but TF_CONFIG says {cluster.role}:{cluster.task_index}: build the "
                "Estimator's RunConfig after TF_CONFIG is set, in the same process")
