"""Which `tf.distribute` strategy a Keras task uses, and what the task does.

`plan_for(cluster, keras_3, gpus)` is a pure decision (table-tested): it reads
the cluster's shape and this task's place in it and returns a `StrategyPlan`.
`make_strategy(plan)` acts on it. The rules:

* no cluster (a local run): the default strategy, or `MirroredStrategy` when
  more than one GPU is visible; the task trains (and evaluates);
* a training cluster of one task (a chief alone, with or without an
  evaluator): the same, on that task; no server or collectives are needed;
* a cluster without ps: `MultiWorkerMirroredStrategy` over the chief and the
  workers (worker:0 is the chief when there is no chief job); every one of
  them trains, in step;
* a cluster with ps: `ParameterServerStrategy`; the chief coordinates (runs
  `model.fit`), workers and ps only serve;
* the evaluator: no strategy; it evaluates checkpoints.

A master (SageMaker's parameter-server mode, a TFJob Master replica) plays the
chief: tf.distribute has no "master" job, so `cluster_resolver` hands it over
as "chief" (in the cluster spec and as the task type), on every task.

Keras 3's `model.fit` cannot train with `MultiWorkerMirroredStrategy` or
`ParameterServerStrategy` (keras-team/keras#20585, #18624): on Keras 3 a task
that trains under either has `own_loop` set, and trains with trainexec's loop
(`trainexec.keras.fit.distributed_fit`) instead of `fit`.

Example:
    ```python
    plan = plan_for(ClusterConfig.from_env(), keras_3=is_keras_3(), gpus=visible_gpus())
    if plan.action == TRAIN:
        with make_strategy(plan).scope():
            model = build_model()
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Any

from trainexec.cluster.config import CHIEF, EVALUATOR, KERAS, MASTER, PS, ClusterConfig
from trainexec.cluster.verdicts import trainer_support
from trainexec.errors import ConfigError
from trainexec.cluster.keepalive import apply_keepalive
from trainexec.trainer import TaskAction

__all__ = [
    "COORDINATE",
    "DEFAULT",
    "EVALUATE",
    "MIRRORED",
    "MULTI_WORKER_MIRRORED",
    "PARAMETER_SERVER",
    "SERVE",
    "STRATEGY_NAMES",
    "TRAIN",
    "StrategyPlan",
    "cluster_resolver",
    "distribute_cluster",
    "is_keras_3",
    "make_strategy",
    "plan_for",
    "visible_gpus",
]

# Strategy kinds.
DEFAULT = "default"
MIRRORED = "mirrored"
MULTI_WORKER_MIRRORED = "multi_worker_mirrored"
PARAMETER_SERVER = "parameter_server"
DISTRIBUTED_KINDS = (MULTI_WORKER_MIRRORED, PARAMETER_SERVER)

# The strategies' names, for the log.
STRATEGY_NAMES = {DEFAULT: "default strategy", MIRRORED: "MirroredStrategy",
                  MULTI_WORKER_MIRRORED: "MultiWorkerMirroredStrategy",
                  PARAMETER_SERVER: "ParameterServerStrategy"}

# What the task does, in trainexec's one vocabulary (`trainexec.trainer.TaskAction`):
# TRAIN runs model.fit (local, a lone chief, every MWMS task); COORDINATE runs model.fit,
# dispatching steps to PSS workers (PSS chief); SERVE only runs a TensorFlow server (PSS
# worker and ps); EVALUATE evaluates checkpoints (the evaluator).
TRAIN = TaskAction.TRAIN
COORDINATE = TaskAction.COORDINATE
SERVE = TaskAction.SERVE
EVALUATE = TaskAction.EVALUATE


@dataclasses.dataclass(frozen=True)
class StrategyPlan:
    """What one task of a Keras job does, and under which strategy.

    Attributes:
      kind: DEFAULT, MIRRORED, MULTI_WORKER_MIRRORED or PARAMETER_SERVER; the
        evaluator's is DEFAULT (no distribution).
      action: TRAIN, COORDINATE, SERVE or EVALUATE.
      cluster: the task's cluster config.
      is_chief: this task writes checkpoints to model_dir and records completion.
      is_local: no cluster: the task also evaluates while it trains.
      own_loop: the task trains with trainexec's loop for Keras 3
        (`trainexec.keras.fit.distributed_fit`), not `model.fit`.
    """

    kind: str
    action: TaskAction
    cluster: ClusterConfig
    is_chief: bool = False
    is_local: bool = False
    own_loop: bool = False

    @property
    def runs_fit(self) -> bool:
        return self.action in (TRAIN, COORDINATE)

    def describe(self) -> str:
        """One line for the log: the task, what it does, the strategy."""
        what = {TRAIN: "trains", COORDINATE: "coordinates training",
                SERVE: "serves variables and steps", EVALUATE: "evaluates checkpoints"}
        chief = " and writes checkpoints" if self.is_chief and self.runs_fit else ""
        loop = ", trainexec's loop for Keras 3" if self.own_loop else ""
        return (f"{self.cluster.task_name} {what[self.action]}{chief} "
                f"(strategy: {self.kind}{loop})")


def _training_kind(cluster: ClusterConfig, gpus: int) -> str:
    """The strategy the training tasks of `cluster` use (pure)."""
    training = cluster.training_cluster
    if sum(len(addresses) for addresses in training.values()) <= 1:
        return MIRRORED if gpus > 1 else DEFAULT
    return PARAMETER_SERVER if PS in training else MULTI_WORKER_MIRRORED


def plan_for(cluster: ClusterConfig, keras_3: bool, gpus: int) -> StrategyPlan:
    """The plan of the task `cluster` describes (pure; see the module doc).

    Raises ConfigError for a cluster Keras cannot train (ps without a chief or
    master, or without workers; a sparse cluster). On Keras 3 (`keras_3`) a
    MultiWorkerMirroredStrategy task or the ParameterServerStrategy chief trains
    with trainexec's own loop (`own_loop`). A master plans as the chief does.
    """
    if cluster.training_cluster:
        support = trainer_support(cluster).get(KERAS)
        if support is not None and not support.trains:
            raise ConfigError(
                f"KerasTrainer cannot train this TF_CONFIG cluster "
                f"({cluster.task_name}): {support.detail}")
    kind = _training_kind(cluster, gpus)
    own_loop = keras_3 and kind in DISTRIBUTED_KINDS
    if cluster.task_type is None:
        return StrategyPlan(kind, TRAIN, cluster, is_chief=True, is_local=True)
    if cluster.task_type == EVALUATOR:
        return StrategyPlan(DEFAULT, EVALUATE, cluster)
    if kind == PARAMETER_SERVER:
        action = COORDINATE if cluster.is_chief else SERVE
        return StrategyPlan(kind, action, cluster, is_chief=cluster.is_chief,
                            own_loop=own_loop and action == COORDINATE)
    return StrategyPlan(kind, TRAIN, cluster, is_chief=cluster.is_chief, own_loop=own_loop)


def is_keras_3() -> bool:
    """Whether `tf.keras` is Keras 3 (TF 2.16+ without TF_USE_LEGACY_KERAS=1)."""
    import tensorflow as tf

    version = getattr(tf.keras, "version", None)
    return callable(version) and str(version()).startswith("3")


def visible_gpus() -> int:
    import tensorflow as tf

    return len(tf.config.list_physical_devices("GPU"))


def distribute_cluster(cluster: ClusterConfig) -> tuple[dict[str, Any], str | None]:
    """The training cluster and task type as tf.distribute is given them (pure):
    the evaluator left out, a master renamed "chief" (tf.distribute has no
    master job), address lists as lists and a sparse job as {index: address}."""
    jobs = {(CHIEF if job == MASTER else job): (tasks if isinstance(tasks, dict)
                                                 else list(tasks))
            for job, tasks in cluster.training_cluster.items()}
    task_type = CHIEF if cluster.task_type == MASTER else cluster.task_type
    return jobs, task_type


def cluster_resolver(cluster: ClusterConfig) -> Any:
    """A resolver for the training cluster only (`distribute_cluster`): the
    evaluator stands outside it, and a master is the chief."""
    import tensorflow as tf

    jobs, task_type = distribute_cluster(cluster)
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(jobs), task_type=task_type, task_id=cluster.task_index,
        rpc_layer=cluster.rpc_layer)


def make_strategy(plan: StrategyPlan) -> Any:
    """The `tf.distribute.Strategy` of a task that runs `model.fit` or evaluates.

    A serving task (PSS worker or ps) has none: it runs a server instead
    (`trainexec.cluster.server.start_standard_server`). The ParameterServerStrategy
    chief's channels get gRPC keepalive (`trainexec.cluster.keepalive`).
    """
    import tensorflow as tf

    if plan.action == SERVE:
        raise ValueError(f"{plan.cluster.task_name} only serves: start its server "
                         "instead of a strategy")
    if plan.action == EVALUATE or plan.kind == DEFAULT:
        return tf.distribute.get_strategy()
    if plan.kind == MIRRORED:
        return tf.distribute.MirroredStrategy()
    if plan.kind == MULTI_WORKER_MIRRORED:
        return tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=cluster_resolver(plan.cluster))
    if plan.kind == PARAMETER_SERVER:
        apply_keepalive()  # before the strategy makes its gRPC channels
        return tf.distribute.ParameterServerStrategy(cluster_resolver(plan.cluster))
    raise ValueError(f"unknown strategy kind {plan.kind!r}")
