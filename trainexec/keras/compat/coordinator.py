"""ParameterServerStrategy's `ClusterCoordinator` internals: stopping its threads, and
tracing a step for a worker's iterator.

| attribute | seen on | when it is missing |
| --- | --- | --- |
| `ParameterServerStrategyV2._cluster_coordinator` (assigned by `ClusterCoordinator`) | 2.15, 2.21 Keras 3, 2.21 tf_keras | `release_coordinator` does nothing (returns True): a PSS chief whose worker reconnects near the end may abort (134) at exit again |
| `ClusterCoordinator._cluster`; `Cluster.failure_handler`, `.workers`, `.closure_queue`, `.resource_cancellation_mgr` (a private class's attributes) | 2.15, 2.21 Keras 3, 2.21 tf_keras | the same (no cluster or handler: nothing done; a part missing is skipped) |
| `Worker.stop`, `_CoordinatedClosureQueue.stop`, `CancellationManager.start_cancel` | 2.15, 2.21 Keras 3, 2.21 tf_keras | AttributeError from `release_coordinator` (not guarded: a rename shows) |
| `WorkerPreemptionHandler` / `CoordinationServicePreemptionHandler` `._should_preemption_thread_run` (written), `._cluster_due_for_update_or_finish`, `._preemption_handler_thread`; `CoordinationServicePreemptionHandler._task_state_poller_thread` | 2.15, 2.21 Keras 3, 2.21 tf_keras | the flag is still written (to no effect); a missing event / thread / poller is skipped: the handler thread is not waited for |
| the closure threads' name prefix `WorkerClosureProcessingLoop-` (not checked by the inventory test) | 2.15, 2.21 | they are not waited for |
| `PerWorkerValues._values` (a per-worker iterator's), `RemoteValueImpl._type_spec`, `ParameterServerStrategyV2Extended._being_scheduled` | 2.21 Keras 3 (`DistributedFit`) | the step is not traced before training: the first `schedule` traces it, and a `train_step` that cannot run in a replica context fails there, without trainexec's ConfigError |

Example:
    ```python
    cluster = coordinator_cluster(strategy)
    if cluster is not None:
        handler_thread, wake = stop_coordinator_threads(cluster)
    ```
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from trainexec.internals import ASSIGNED, ATTRIBUTE, LINE_KERAS_3, LINES, Internal

__all__ = ["CLOSURE_THREAD_PREFIX", "INTERNALS", "being_scheduled", "can_mark_scheduling",
           "coordinator_cluster",
           "stop_coordinator_threads", "worker_iterator_spec"]

CLOSURE_THREAD_PREFIX = "WorkerClosureProcessingLoop-"

_COORDINATOR = "tensorflow.python.distribute.coordinator.cluster_coordinator"
_PSS = "tensorflow.python.distribute.parameter_server_strategy_v2"
_VALUES = "tensorflow.python.distribute.coordinator.values"
_NOT_RELEASED = ("release_coordinator does not stop the coordinator's threads: a PSS chief "
                 "may abort (134) at exit after a late worker reconnection")
_NOT_TRACED = ("DistributedFit does not trace the PSS step before training: the first "
               "schedule does, without trainexec's replica-context ConfigError")


def _release(owner: str, attribute: str, kind: str = ASSIGNED) -> Internal:
    return Internal(owner=owner, attribute=attribute, lines=LINES,
                    when_missing=_NOT_RELEASED, kind=kind)


INTERNALS = (
    _release(f"{_PSS}.ParameterServerStrategyV2", "_cluster_coordinator"),
    _release(f"{_COORDINATOR}.ClusterCoordinator", "_cluster"),
    *(_release(f"{_COORDINATOR}.Cluster", name)
      for name in ("failure_handler", "workers", "closure_queue", "resource_cancellation_mgr")),
    _release(f"{_COORDINATOR}.Worker", "stop", kind=ATTRIBUTE),
    _release(f"{_COORDINATOR}._CoordinatedClosureQueue", "stop", kind=ATTRIBUTE),
    _release("tensorflow.python.eager.cancellation.CancellationManager", "start_cancel",
             kind=ATTRIBUTE),
    *(_release(f"{_COORDINATOR}.{handler}", name)
      for handler in ("WorkerPreemptionHandler", "CoordinationServicePreemptionHandler")
      for name in ("_should_preemption_thread_run", "_cluster_due_for_update_or_finish",
                   "_preemption_handler_thread")),
    _release(f"{_COORDINATOR}.CoordinationServicePreemptionHandler",
             "_task_state_poller_thread"),
    Internal(owner=f"{_VALUES}.PerWorkerValues", attribute="_values",
             lines=(LINE_KERAS_3,), when_missing=_NOT_TRACED, kind=ASSIGNED),
    Internal(owner=f"{_VALUES}.RemoteValueImpl", attribute="_type_spec",
             lines=(LINE_KERAS_3,), when_missing=_NOT_TRACED, kind=ASSIGNED),
    Internal(owner=f"{_PSS}.ParameterServerStrategyV2Extended", attribute="_being_scheduled",
             lines=(LINE_KERAS_3,), when_missing=_NOT_TRACED, kind=ASSIGNED),
)


def coordinator_cluster(strategy: Any) -> Any:
    """The `Cluster` of `strategy`'s ClusterCoordinator when it has a failure handler,
    else None (no coordinator, or TensorFlow's internals changed)."""
    cluster = getattr(getattr(strategy, "_cluster_coordinator", None), "_cluster", None)
    if cluster is None or getattr(cluster, "failure_handler", None) is None:
        return None
    return cluster


def stop_coordinator_threads(cluster: Any) -> tuple[threading.Thread | None,
                                                   Callable[[], None]]:
    """Asks every thread of `cluster` to stop, without waiting: the failure handler,
    its task-state poller, each worker's closure thread, the closure queue, and the
    resources a recovered worker may be creating. Returns the failure handler's
    thread (None if not found) and a function that wakes it (to be called again
    while waiting: the handler clears its signal after a reconnection unless it saw
    the stop flag down)."""
    handler = cluster.failure_handler
    # Not handler.stop(): it takes the lock a reconnection in progress holds.
    handler._should_preemption_thread_run = False
    poller = getattr(handler, "_task_state_poller_thread", None)
    if poller is not None:
        poller.stop()
    due = getattr(handler, "_cluster_due_for_update_or_finish", None)
    for worker in getattr(cluster, "workers", ()):
        worker.stop()
    queue = getattr(cluster, "closure_queue", None)
    if queue is not None:
        queue.stop()
    resources = getattr(cluster, "resource_cancellation_mgr", None)
    if resources is not None:  # a recovered worker's datasets being created again
        resources.start_cancel()
    return (getattr(handler, "_preemption_handler_thread", None),
            due.set if due is not None else (lambda: None))


def worker_iterator_spec(per_worker_iterator: Any) -> Any:
    """The type spec of one worker's iterator of a per-worker distributed iterator,
    or None when TensorFlow does not show it (it has no public way to)."""
    workers = getattr(per_worker_iterator, "_values", None) or [None]
    return getattr(workers[0], "_type_spec", None)


def can_mark_scheduling(strategy: Any) -> bool:
    """Whether `being_scheduled` can mark `strategy` (its private flag exists)."""
    return hasattr(strategy.extended, "_being_scheduled")


@contextlib.contextmanager
def being_scheduled(strategy: Any) -> Iterator[bool]:
    """Marks `strategy` as scheduling a function, as `ClusterCoordinator.schedule`
    does while it traces one; yields False (marking nothing) where the flag is gone."""
    extended = strategy.extended
    if not can_mark_scheduling(strategy):
        yield False
        return
    extended._being_scheduled = True
    try:
        yield True
    finally:
        extended._being_scheduled = False
