"""The session configs an Estimator uses when its RunConfig gives none, as tf.estimator's.

* `default_session_config()`: soft placement (an op without a kernel for the device it
  asks for runs where it can) and one pass of Grappler's meta optimizer; the Estimator's
  sessions use it when `RunConfig.session_config` is None.
* `cluster_session_config(task_type, task_id)`: the same, with the device filters a
  RunConfig built in a cluster gets by default, so that a task talks only to the tasks
  it needs: the chief, master or a worker sees the ps and itself, a ps sees every
  training task; None for any other task type (an evaluator has no cluster).

Example:
    ```python
    list(cluster_session_config("worker", 1).device_filters)  # ['/job:ps', '/job:worker/task:1']
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.task_types import CHIEF, MASTER, PS, WORKER

__all__ = ["cluster_session_config", "default_session_config"]

_META_OPTIMIZER_ONE = 1  # RewriterConfig.ONE: one pass of the meta optimizer


def default_session_config(device_filters: list[str] | None = None) -> Any:
    """A `tf.compat.v1.ConfigProto` with soft placement, one meta-optimizer pass and
    `device_filters`."""
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto(allow_soft_placement=True,
                                      device_filters=device_filters or [])
    config.graph_options.rewrite_options.meta_optimizer_iterations = _META_OPTIMIZER_ONE
    return config


def cluster_session_config(task_type: str, task_id: int) -> Any:
    """The default session config of `task_type`:`task_id` in a cluster, or None."""
    filters = {
        MASTER: ["/job:ps", f"/job:{MASTER}"],
        CHIEF: ["/job:ps", f"/job:{CHIEF}"],
        WORKER: ["/job:ps", f"/job:{WORKER}/task:{task_id}"],
        PS: ["/job:ps", f"/job:{WORKER}", f"/job:{CHIEF}", f"/job:{MASTER}"],
    }.get(task_type)
    return None if filters is None else default_session_config(filters)
