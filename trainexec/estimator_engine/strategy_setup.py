"""This task's copy of a RunConfig's strategy, and the session and server configs it asks for.

tf.estimator's distribute coordinator gave each task of a TF_CONFIG cluster a copy of
`train_distribute` configured for that task; trainexec does the same, publicly:

* `for_task(strategy, config)`: a copy of the strategy; in a cluster (a training task
  of the RunConfig's `cluster_spec`) configured with the cluster, this task's type and
  index (`strategy.configure(...)`, in a graph of its own, so that it starts no eager
  server): MultiWorkerMirroredStrategy then all-reduces across the chief and workers,
  ParameterServerStrategy puts the variables on the ps. Without a cluster (one machine,
  an evaluator, and every evaluation strategy) it is used as built;
* `session_config_for(strategy, base)`: the sessions' config, `base` (the Estimator's)
  as the strategy updates it (`update_config_proto`: MultiWorkerMirroredStrategy's
  collective group leader and device filters, ParameterServerStrategy's filters);
* `server_config(config)`: the config this task's `tf.distribute.Server` starts with
  when the RunConfig trains with a strategy in a cluster: the session config without
  device filters, as the distribute coordinator started servers (a
  MultiWorkerMirroredStrategy's collectives wait forever on a server that lacks its group
  leader); None otherwise;
* `serving_already(config)`: whether this process already serves its task of the
  cluster. A MultiWorkerMirroredStrategy built eagerly while TF_CONFIG names a cluster
  (as TensorFlow's multi-worker Estimator tutorial builds it, before anything else)
  starts this task's server itself, with its collective config; its local devices are
  then named `/job:<type>/replica:0/task:<index>/...`. Another server on that address
  would not start, and sessions reach that one as they would a standard server (as
  tf.estimator's distribute coordinator skipped its own server then).

Example:
    ```python
    strategy = for_task(config.train_distribute, config)
    session_config = session_config_for(strategy, config.session_config)
    ```
"""

from __future__ import annotations

import copy
from typing import Any

from trainexec.task_types import CHIEF, WORKER

__all__ = ["for_task", "in_cluster", "server_config", "serving_already",
           "session_config_for"]


def in_cluster(config: Any) -> bool:
    """Whether `config` (a RunConfig) is a training task of a TF_CONFIG cluster."""
    spec = config.cluster_spec
    return bool(spec.jobs) and config.task_type in (CHIEF, WORKER)


def for_task(strategy: Any, config: Any, training: bool = True) -> Any:
    """A copy of `strategy` for this task (module doc); `training=False` for an
    evaluation strategy, which runs on this machine only."""
    import tensorflow as tf

    copied = copy.deepcopy(strategy)
    if training and in_cluster(config):
        with tf.Graph().as_default():  # graph mode: configure starts no eager server
            copied.configure(cluster_spec=config.cluster_spec, task_type=config.task_type,
                             task_id=config.task_id)
    return copied


def serving_already(config: Any) -> bool:
    """Whether this process already serves `config`'s task of its cluster (module doc)."""
    import tensorflow as tf

    if not in_cluster(config):
        return False
    prefix = f"/job:{config.task_type}/replica:0/task:{config.task_id}/"
    return any(device.name.startswith(prefix) for device in tf.config.list_logical_devices())


def session_config_for(strategy: Any, base: Any) -> Any:
    """`base` (a ConfigProto, or None for an empty one) as `strategy` updates it."""
    import tensorflow as tf

    return strategy.update_config_proto(base if base is not None
                                        else tf.compat.v1.ConfigProto())


def server_config(config: Any) -> Any:
    """The server config of a task that trains with `config.train_distribute` in a
    cluster (module doc), or None."""
    strategy = config.train_distribute
    if strategy is None or not in_cluster(config):
        return None
    updated = session_config_for(for_task(strategy, config), config.session_config)
    del updated.device_filters[:]
    return updated
