"""The cluster and role an Estimator's `RunConfig` was built with.

`tf.estimator.train_and_evaluate` takes the cluster and this task's role from
`estimator.config`: a `RunConfig` reads TF_CONFIG when it is built, and the
Estimator's own sessions (chief or not, which master) follow it. trainexec does
the same. `run_config_cluster` turns the RunConfig's `cluster_spec`,
`task_type` and `task_id` into a `ClusterConfig`, validated like TF_CONFIG (an
address with port 0 is refused here too); `choose_cluster` returns it, and when
TF_CONFIG read at call time says otherwise, logs one warning naming both.

Only the environment (`"google"`: the platform starts the servers) and the
`rpc_layer` come from TF_CONFIG at call time, as in tf.estimator, whose
`RunConfig` keeps neither. Nor does it keep the cluster of an evaluator (its
`cluster_spec` is empty there): TF_CONFIG naming the same evaluator task agrees
with it, and its cluster is kept. A cluster handed to `TrainingExecutor(cluster=...)`
is used as given, with the same warning when the RunConfig disagrees.

Example:
    ```python
    cluster = choose_cluster(estimator.config, ClusterConfig.from_env())
    ```
"""

from __future__ import annotations

import logging
from typing import Any

from trainexec.cluster.config import EVALUATOR, WORKER, ClusterConfig
from trainexec.errors import ConfigError

__all__ = ["choose_cluster", "describe", "run_config_cluster", "same_task"]

logger = logging.getLogger(__name__)


def run_config_cluster(config: Any, at_call: ClusterConfig) -> ClusterConfig | None:
    """The `ClusterConfig` `config` (a `tf.estimator.RunConfig`) was built for, or
    None when `config` carries no cluster (not a RunConfig: a test's stand-in).

    Raises ConfigError, naming the field, when its cluster breaks a rule trainexec
    checks in TF_CONFIG (such as an address with port 0)."""
    import tensorflow as tf

    spec = getattr(config, "cluster_spec", None)
    if not isinstance(spec, tf.train.ClusterSpec):
        return None
    # A sparse job is {index: address}; TF_CONFIG's form has string indices.
    jobs = {job: {str(i): a for i, a in tasks.items()} if isinstance(tasks, dict)
            else list(tasks) for job, tasks in spec.as_dict().items()}
    task_type = getattr(config, "task_type", None)
    data: dict[str, Any] = {"rpc_layer": at_call.rpc_layer}
    if at_call.environment is not None:
        data["environment"] = at_call.environment
    if not jobs and task_type in (None, WORKER):
        return ClusterConfig.from_dict(data)  # RunConfig's local run: "worker", no cluster
    data["cluster"] = jobs
    data["task"] = {"type": task_type, "index": getattr(config, "task_id", None)}
    try:
        return ClusterConfig.from_dict(data)
    except ConfigError as error:  # its words name TF_CONFIG's fields: say whose they are
        what = str(error).removeprefix("TF_CONFIG ")
        raise ConfigError(
            f"estimator.config (the Estimator's RunConfig) {what}. The RunConfig took its "
            "cluster from TF_CONFIG when it was built (tf.estimator.RunConfig()): fix "
            "TF_CONFIG and build the RunConfig again") from error


def choose_cluster(config: Any, given: ClusterConfig, explicit: bool = False) -> ClusterConfig:
    """The cluster and role an Estimator with RunConfig `config` runs as.

    `given` is TF_CONFIG read now, or with `explicit` the executor's `cluster`
    argument. The RunConfig's (see `run_config_cluster`) wins over TF_CONFIG, an
    explicit cluster over the RunConfig; `given` is used when `config` carries no
    cluster. One warning names both when they disagree."""
    own = run_config_cluster(config, given)
    if own is None or same_task(own, given):
        return given
    chosen = given if explicit else own
    logger.warning(
        "estimator.config (the Estimator's RunConfig) is for %s, but %s says %s: "
        "running as %s%s", describe(own),
        "the `cluster` argument" if explicit else "TF_CONFIG now", describe(given),
        chosen.task_name,
        "" if explicit else (
            ", as tf.estimator does (a RunConfig reads TF_CONFIG when it is built, and "
            "the Estimator's sessions follow it). To run as TF_CONFIG says, build the "
            "RunConfig after setting TF_CONFIG"))
    return chosen


def same_task(own: ClusterConfig, given: ClusterConfig) -> bool:
    """Whether `own` (a RunConfig's) and `given` are the same task of the same
    cluster; for an evaluator, whose RunConfig keeps no cluster, the same task."""
    if (own.task_type, own.task_index) != (given.task_type, given.task_index):
        return False
    return own.jobs == given.jobs or (own.task_type == EVALUATOR and not own.is_distributed)


def describe(cluster: ClusterConfig) -> str:
    """`evaluator:1 of {"chief": [...]}`, or `a local run (no cluster)`."""
    if not cluster.is_distributed:
        return ("a local run (no cluster)" if cluster.task_type is None
                else f"{cluster.task_name} (no cluster)")
    jobs = {job: list(tasks) if not isinstance(tasks, dict) else tasks
            for job, tasks in cluster.jobs.items()}
    return f"{cluster.task_name} of cluster {jobs}"
