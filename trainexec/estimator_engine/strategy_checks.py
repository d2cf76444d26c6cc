"""The distribution strategies a `RunConfig` takes, and those it refuses.

tf.estimator took a `tf.distribute` strategy in `RunConfig(train_distribute=...,
eval_distribute=...)` and called the `model_fn` once per replica, in graph mode.
trainexec.estimator takes the strategies tf.estimator ran so (`strategy_kind`):

| strategy | runs |
| --- | --- |
| `tf.distribute.MirroredStrategy`, `tf.compat.v1.distribute.MirroredStrategy` | one machine, one replica per device |
| `tf.distribute.MultiWorkerMirroredStrategy` (or `.experimental.`), `tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy` | every training task of a TF_CONFIG cluster (chief and workers, or workers only: worker 0 leads), synchronous all-reduce; or one machine |
| `tf.compat.v1.distribute.experimental.ParameterServerStrategy` | between-graph workers of a TF_CONFIG cluster with ps (or workers only and ps); or one machine, variables on its CPU |

`check_strategies` reads the three RunConfig fields (`experimental_distribute`'s
`train_distribute` and `eval_distribute` count as the fields themselves, as in
tf.estimator) and raises `ConfigError` (a ValueError) before anything is written,
naming the field, the value and what to use instead, for:

* TensorFlow 2's `ParameterServerStrategy` (tf.estimator's words first);
* a `TPUStrategy`; `OneDeviceStrategy` (it adds nothing: without a strategy an Estimator
  trains on one device); any other strategy or object;
* `experimental_distribute.remote_cluster` (tf.estimator's standalone client);
* a strategy the task's cluster cannot run (`check_cluster`): MirroredStrategy in a
  cluster, MultiWorkerMirroredStrategy beside ps, any strategy in a cluster with a
  `master` (TF 1's form).

A strategy whose replicas would keep Keras 3 layers' per-replica variables in the graph
is refused when the graph is built (`trainexec.estimator_engine.replicated_graph`).

Example:
    ```python
    train, evaluate = check_strategies(tf.distribute.MirroredStrategy(), None, None)
    strategy_kind(train)        # "MirroredStrategy"
    ```
"""

from __future__ import annotations

from typing import Any, Mapping

from trainexec.errors import ConfigError
from trainexec.task_types import MASTER, PS

__all__ = ["MIRRORED", "MULTI_WORKER_MIRRORED", "PARAMETER_SERVER", "SUPPORTED",
           "check_cluster", "check_strategies", "describe", "strategy_kind"]

MIRRORED = "MirroredStrategy"
MULTI_WORKER_MIRRORED = "MultiWorkerMirroredStrategy"
PARAMETER_SERVER = "ParameterServerStrategy"
SUPPORTED = ("tf.distribute.MirroredStrategy, tf.distribute.MultiWorkerMirroredStrategy "
             "(or their tf.compat.v1 forms) and "
             "tf.compat.v1.distribute.experimental.ParameterServerStrategy")
_TF2_PS = ("Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` for "
           "parameter server strategy with estimator.")
_BOTH = "Either `{field}` or`experimental_distribute.{field}` can be set."


def strategy_kind(strategy: Any) -> str | None:
    """MIRRORED, MULTI_WORKER_MIRRORED or PARAMETER_SERVER for a strategy an Estimator
    runs (its class, tf.distribute's or tf.compat.v1's), else None."""
    import tensorflow as tf

    v2, v1 = tf.distribute, tf.compat.v1.distribute
    if isinstance(strategy, (v2.MirroredStrategy, v1.MirroredStrategy)):
        return MIRRORED
    if isinstance(strategy, (v2.MultiWorkerMirroredStrategy,
                             v1.experimental.MultiWorkerMirroredStrategy)):
        return MULTI_WORKER_MIRRORED
    if isinstance(strategy, v1.experimental.ParameterServerStrategy):
        return PARAMETER_SERVER
    return None


def describe(strategy: Any) -> str:
    """`MirroredStrategy (2 replicas)`: the class and, where known, its replicas."""
    replicas = getattr(strategy, "num_replicas_in_sync", None)
    name = type(strategy).__name__
    return f"{name} ({replicas} replica{'s' * (replicas != 1)})" if isinstance(
        replicas, int) else name


def _is_tf2_parameter_server_strategy(strategy: Any) -> bool:
    import tensorflow as tf

    tf2 = getattr(tf.distribute.experimental, "ParameterServerStrategy", None)
    return tf2 is not None and isinstance(strategy, tf2)


def _check_one(field: str, strategy: Any) -> None:
    """ConfigError unless `strategy` (RunConfig `field`) is one an Estimator runs."""
    if strategy_kind(strategy) is not None:
        return
    import tensorflow as tf

    name = type(strategy).__name__
    if _is_tf2_parameter_server_strategy(strategy):
        raise ConfigError(
            f"{_TF2_PS} RunConfig `{field}` is TensorFlow 2's {name}, which Estimators "
            "never ran: give tf.compat.v1.distribute.experimental.ParameterServerStrategy(), "
            "or leave it unset for between-graph training with the ps of a TF_CONFIG "
            "cluster (as tf.estimator did), or train a Keras model with trainexec.KerasTrainer")
    if name.startswith("TPUStrategy"):
        raise ConfigError(
            f"RunConfig `{field}` is a TPU strategy ({name}): trainexec.estimator does not "
            "run on TPUs "
            "(tf.estimator's TPUEstimator did). Train on CPUs or GPUs with "
            f"{SUPPORTED}, or train a Keras model with TPUStrategy")
    if isinstance(strategy, (tf.distribute.OneDeviceStrategy,
                             tf.compat.v1.distribute.OneDeviceStrategy)):
        raise ConfigError(
            f"RunConfig `{field}` is a {name}, which adds nothing to an Estimator: "
            f"leave `{field}` unset to train on one device (the model_fn's ops go where "
            f"its devices say), or give tf.distribute.MirroredStrategy(devices=[...]) for "
            "several devices")
    what = (f"a {name}" if isinstance(strategy, tf.distribute.Strategy) or isinstance(
        strategy, tf.compat.v1.distribute.Strategy) else f"{strategy!r}, not a strategy")
    raise ConfigError(
        f"RunConfig `{field}` is {what}: trainexec.estimator runs {SUPPORTED}. Give "
        f"one of them, or leave `{field}` unset")


def check_strategies(train: Any, evaluate: Any, experimental: Any) -> tuple[Any, Any]:
    """(train_distribute, eval_distribute), `experimental_distribute`'s included, each
    checked (module doc); ConfigError naming the field."""
    if experimental is not None:
        remote = getattr(experimental, "remote_cluster", None)
        if remote is not None:
            raise ConfigError(
                f"RunConfig `experimental_distribute.remote_cluster` ({remote!r}) asks for "
                "tf.estimator's standalone client, which trainexec.estimator does not run: "
                "leave remote_cluster unset and run every task of the cluster with its own "
                "TF_CONFIG (`trainexec launch`, a TFJob, Slurm) and "
                "trainexec.estimator.train_and_evaluate")
        for field in ("train_distribute", "eval_distribute"):
            inner = getattr(experimental, field, None)
            given = train if field == "train_distribute" else evaluate
            if inner is not None and given is not None:
                raise ConfigError(
                    f"{_BOTH.format(field=field)} RunConfig has `{field}` "
                    f"({type(given).__name__}) and `experimental_distribute.{field}` "
                    f"({type(inner).__name__}): give one of them")
        train = train if train is not None else getattr(experimental, "train_distribute", None)
        evaluate = (evaluate if evaluate is not None
                    else getattr(experimental, "eval_distribute", None))
    for field, strategy in (("train_distribute", train), ("eval_distribute", evaluate)):
        if strategy is not None:
            _check_one(field, strategy)
    return train, evaluate


def check_cluster(strategy: Any, jobs: Mapping[str, Any], task: str) -> None:
    """ConfigError when RunConfig's `train_distribute` cannot train in the TF_CONFIG
    cluster `jobs` (job -> tasks; empty on one machine) as task `task`."""
    kind = strategy_kind(strategy)
    if kind is None or not jobs:
        return
    name = type(strategy).__name__
    if MASTER in jobs:
        raise ConfigError(
            f"RunConfig `train_distribute` ({name}) with a TF_CONFIG cluster that has a "
            f'"master" ({task}): a master is TF 1\'s between-graph form, without '
            'strategies. Rename cluster.master to "chief", or leave train_distribute unset')
    if kind == MIRRORED:
        raise ConfigError(
            f"RunConfig `train_distribute` ({name}) trains on one machine, but TF_CONFIG "
            f"puts {task} in a cluster ({', '.join(jobs)}): give "
            "tf.distribute.MultiWorkerMirroredStrategy() to train on every task of the "
            "cluster, or unset TF_CONFIG to train here alone")
    if kind == MULTI_WORKER_MIRRORED and PS in jobs:
        raise ConfigError(
            f"RunConfig `train_distribute` ({name}) keeps every variable on its workers, "
            f"but TF_CONFIG's cluster has ps tasks ({task}): drop the ps job, or give "
            "tf.compat.v1.distribute.experimental.ParameterServerStrategy() to keep the "
            "variables on the ps")
