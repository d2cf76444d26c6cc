"""`TrainingExecutor` and `train_and_evaluate`: pick the role runner, nothing else.

Example (the same script runs as chief, worker, ps, evaluator or alone; only
TF_CONFIG differs)::

    estimator = tf.estimator.LinearClassifier(feature_columns, model_dir=...)
    train_spec = trainexec.TrainSpec(train_input_fn, max_steps=1000)
    eval_spec = trainexec.EvalSpec(eval_input_fn, steps=10, throttle_secs=60)
    metrics, exports = trainexec.train_and_evaluate(estimator, train_spec, eval_spec)
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from trainexec.clock import Clock, SystemClock
from trainexec.cluster import CHIEF, MASTER, PS, WORKER, ClusterConfig
from trainexec.continuous import ContinuousEvalListener
from trainexec.errors import ConfigError
from trainexec.model import check_trainable
from trainexec.server import WorkerDelay
from trainexec.specs import validate_hooks, as_eval_spec, as_train_spec
from trainexec.tasks import chief, evaluator, local, master, ps, worker
from trainexec.tasks.context import TaskContext

__all__ = ["TrainingExecutor", "train_and_evaluate"]

logger = logging.getLogger(__name__)

class TrainingExecutor:
    """Runs this process's role of a train-and-evaluate job.

    Args:
      estimator: a `tf.estimator.Estimator` (or any `TrainableModel`).
      train_spec: a trainexec or tf.estimator `TrainSpec`.
      eval_spec: a trainexec or tf.estimator `EvalSpec` (None only for roles
        that do not evaluate).
      train_hooks: extra `SessionRunHook`s for every training task.
      continuous_eval_listener: a `ContinuousEvalListener` for the evaluator and
        local runs.

    Keyword-only options (beyond tf.estimator):
      cluster: the `ClusterConfig` (default: parsed from TF_CONFIG).
      clock: time source for delays and throttling.
      worker_delay: the worker start-delay rule (`WorkerDelay(0)` disables it).
      poll_secs: how often a waiting task re-checks: the evaluator for a new
        checkpoint, a non-chief worker for the model the chief initializes.
      evaluator_idle_timeout_secs: stop the evaluator after this long without
        a new checkpoint (default: wait as long as training runs).
      server_factory: builds the TensorFlow server (default tf.distribute.Server).
      ps_serves_forever: keep a ps serving until it is killed, as TensorFlow's
        does; by default it exits once every training task has recorded that it
        finished (see `trainexec.finished_tasks`).
    """

    def __init__(self, estimator: Any, train_spec: Any, eval_spec: Any,
                 train_hooks: Any = None,
                 continuous_eval_listener: ContinuousEvalListener | None = None, *,
                 cluster: ClusterConfig | None = None, clock: Clock | None = None,
                 worker_delay: WorkerDelay | None = None, poll_secs: float = 1.0,
                 evaluator_idle_timeout_secs: float | None = None,
                 server_factory: Callable[..., Any] | None = None,
                 ps_serves_forever: bool = False) -> None:
        check_trainable(estimator)
        if continuous_eval_listener is not None and not isinstance(
                continuous_eval_listener, ContinuousEvalListener):
            raise TypeError("`continuous_eval_listener` must have type "
                            "`trainexec.ContinuousEvalListener`.")
        if poll_secs is None or poll_secs <= 0:
            raise ConfigError(f"`poll_secs` ({poll_secs}) must be > 0 seconds, e.g. 1.0")
        self._estimator = estimator
        self._context = TaskContext(
            estimator=estimator,
            train_spec=as_train_spec(train_spec),
            eval_spec=None if eval_spec is None else as_eval_spec(eval_spec),
            train_hooks=validate_hooks(train_hooks),
            listener=continuous_eval_listener or ContinuousEvalListener(),
            cluster=cluster if cluster is not None else ClusterConfig.from_env(),
            clock=clock or SystemClock(),
            worker_delay=worker_delay or WorkerDelay(),
            poll_secs=poll_secs,
            idle_timeout_secs=evaluator_idle_timeout_secs,
            server_factory=server_factory,
            ps_serves_forever=bool(ps_serves_forever))

    @property
    def estimator(self) -> Any:
        return self._estimator

    @property
    def cluster(self) -> ClusterConfig:
        return self._context.cluster

    def run(self) -> Any:
        """Runs the role TF_CONFIG gives this process.

        Returns `(metrics, export_results)` for a local run and for the
        evaluator; None for the other roles.
        """
        cluster = self._context.cluster
        self._check_not_distribute_coordinator(cluster)
        self._check_matches_run_config(cluster)
        if cluster.role == "local":
            logger.info("Running training and evaluation locally (non-distributed).")
            return self.run_local()
        if cluster.task_type in (CHIEF, MASTER, WORKER, PS) and not cluster.has_chief:
            empty = [f"cluster.{job} is an empty list" for job in (CHIEF, MASTER)
                     if job in cluster.empty_jobs]
            raise ConfigError(
                "TF_CONFIG cluster has no \"chief\" (or \"master\") job"
                + (f" ({empty[0]})" if empty else "") + ": Estimator "
                "training needs exactly one chief to save checkpoints; add "
                '"chief": ["host:port"] to cluster (a TFJob Chief replica spec with '
                "replicas: 1). A cluster of workers only suits Keras "
                "MultiWorkerMirroredStrategy instead (see `trainexec tfconfig`)")
        logger.info("Running %s of the cluster.", cluster.task_name)
        return getattr(self, "run_" + cluster.task_type)()

    def _check_not_distribute_coordinator(self, cluster: ClusterConfig) -> None:
        config = getattr(self._estimator, "config", None)
        if cluster.is_distributed and getattr(config, "_distribute_coordinator_mode", None):
            strategy = getattr(config, "train_distribute", None)
            raise ConfigError(
                f"RunConfig(train_distribute={type(strategy).__name__}) with a TF_CONFIG "
                "cluster runs through TensorFlow's distribute coordinator, which trainexec "
                "does not drive: call tf.estimator.train_and_evaluate for it, or leave "
                "train_distribute unset for parameter-server (between-graph) training")

    def _check_matches_run_config(self, cluster: ClusterConfig) -> None:
        config = getattr(self._estimator, "config", None)
        task_type = getattr(config, "task_type", None)
        if task_type in (None, "worker") and cluster.task_type is None:
            return  # RunConfig's default for a local run is "worker"
        if task_type is not None and (task_type != cluster.task_type or getattr(
                config, "task_id", cluster.task_index) != cluster.task_index):
            raise ConfigError(
                f"estimator.config is for task {task_type}:{getattr(config, 'task_id', '?')} "
                f"but TF_CONFIG says {cluster.role}:{cluster.task_index}: build the "
                "Estimator's RunConfig after TF_CONFIG is set, in the same process")

    def run_chief(self) -> None:
        """Trains as the chief and records when training is done."""
        return chief.run(self._context)

    def run_worker(self) -> None:
        """Trains as a worker after its staggered start delay."""
        return worker.run(self._context)

    def run_master(self) -> None:
        """Trains as the master, evaluating after checkpoint saves."""
        return master.run(self._context)

    def run_ps(self) -> None:
        """Serves variables as a parameter server until every training task has
        finished (until killed with `ps_serves_forever=True`)."""
        return ps.run(self._context)

    def run_evaluator(self) -> tuple:
        """Evaluates new checkpoints until the run's last one is evaluated."""
        return evaluator.run(self._context)

    def run_local(self) -> tuple:
        """Trains and evaluates in this process; returns (metrics, exports)."""
        return local.run(self._context)


def train_and_evaluate(estimator: Any, train_spec: Any, eval_spec: Any,
                       **options: Any) -> Any:
    """Drop-in for `tf.estimator.train_and_evaluate`.

    Same arguments and return value: `(metrics, export_results)` locally (and
    on the evaluator), None for other distributed roles. `options` are the
    keyword-only options of `TrainingExecutor`.
    """
    eval_spec = as_eval_spec(eval_spec)  # fail fast on a bad eval spec
    executor = TrainingExecutor(estimator, train_spec, eval_spec, **options)
    return executor.run()
