"""Starting the standard TensorFlow server, and the worker start-delay rule.

Example:
    ```python
    server = start_standard_server(cluster)          # None for a single node
    delay = WorkerDelay().secs_for(cluster.task_type, cluster.task_index)
    ```
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable

from trainexec.cluster.config import TRAINER_TYPES, WORKER, ClusterConfig
from trainexec.errors import ConfigError
from trainexec.contract.exit_codes import ServerUnavailableError

__all__ = ["DEFAULT_MAX_WORKER_DELAY_SECS", "WorkerDelay", "start_standard_server"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_WORKER_DELAY_SECS = 60.0


@dataclasses.dataclass(frozen=True)
class WorkerDelay:
    """Worker `i` waits `(i + 1) * secs_per_index` seconds, capped, before training.

    Staggering helps asynchronous training converge. `max_secs=None` takes
    `RunConfig.experimental_max_worker_delay_secs`, else 60 s; 0 for either
    field disables the delay.
    """

    secs_per_index: float = 5.0
    max_secs: float | None = None

    def __post_init__(self) -> None:
        if self.secs_per_index is None or self.secs_per_index < 0:
            raise ConfigError(
                f"`worker_delay.secs_per_index` ({self.secs_per_index}) must be >= 0 "
                "seconds (0 disables the worker start delay)")
        if self.max_secs is not None and self.max_secs < 0:
            raise ConfigError(
                f"`worker_delay.max_secs` ({self.max_secs}) must be >= 0 seconds or None")

    def secs_for(self, task_type: str | None, task_index: int | None,
                 run_config_max_secs: float | None = None) -> float:
        if task_type != WORKER or task_index is None:
            return 0.0
        cap = self.max_secs
        if cap is None:
            cap = (DEFAULT_MAX_WORKER_DELAY_SECS if run_config_max_secs is None
                   else float(run_config_max_secs))
        return float(min(cap, (task_index + 1) * self.secs_per_index))


def start_standard_server(cluster: ClusterConfig, session_config: Any = None,
                          server_factory: Callable[..., Any] | None = None,
                          protocol: str | None = None, server_config: Any = None) -> Any:
    """Starts this task's `tf.distribute.Server`; None when none is needed.

    The server's config is `server_config` when given (a `tf.compat.v1.ConfigProto`
    used whole: a MultiWorkerMirroredStrategy's servers need its collective group
    leader); else a default one with `session_config`'s GPU options.

    No server is started for a cluster of a single training task (unless
    TF_CONFIG also lists an evaluator or an empty job: RunConfig then gives the
    trainer a gRPC master, so it needs its server). The server speaks
    `protocol` (default: the cluster's `rpc_layer`) and serves the training
    cluster: the evaluator stands outside it, and empty jobs are left out.

    The server, and its port, last until the process exits: TensorFlow's gRPC
    server cannot be stopped (`Server.__del__` asks it to stop, which it does
    not implement, and leaks it), so `del server` frees nothing. A task that is
    done returns, and its process exits.
    """
    if not cluster.is_distributed or cluster.task_type is None:
        raise ConfigError(
            "Could not start the TensorFlow server: TF_CONFIG has no cluster and "
            "task; set both (see `trainexec tfconfig`)")
    if cluster.task_address is None:
        raise ConfigError(
            f"Could not start the TensorFlow server: task {cluster.task_type}:"
            f"{cluster.task_index} has no address in TF_CONFIG cluster (jobs: "
            f"{', '.join(cluster.cluster)}), so there is no master to serve")
    if cluster.is_single_node and cluster.task_type in TRAINER_TYPES:
        logger.info("Skip starting the TensorFlow server: the cluster has one node.")
        return None
    import tensorflow as tf

    protocol = protocol or cluster.rpc_layer
    proto = tf.compat.v1.ConfigProto(log_device_placement=False)
    if server_config is not None:
        proto.CopyFrom(server_config)
    elif session_config is not None and hasattr(session_config, "gpu_options"):
        proto.gpu_options.CopyFrom(session_config.gpu_options)
    factory = server_factory or tf.distribute.Server
    try:
        server = factory(
            tf.train.ClusterSpec(cluster.training_cluster), job_name=cluster.task_type,
            task_index=cluster.task_index, protocol=protocol,
            config=proto, start=False)
        server.start()
    except tf.errors.OpError as err:  # a port still held, an address that does not resolve
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ServerUnavailableError(
            f"Could not start the TensorFlow server of {cluster.task_name} at "
            f"{cluster.task_address}: {first} (a port still held by a previous run of this "
            "task, or an address that does not resolve yet; a restart may fix it)") from err
    logger.info("Started TensorFlow server for %s at %s://%s", cluster.task_name,
                protocol, cluster.task_address)
    return server
