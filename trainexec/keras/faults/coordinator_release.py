"""Stopping a ParameterServerStrategy coordinator's threads once training is over.

TensorFlow's `ClusterCoordinator` keeps daemon threads that call into its C++
runtime: a failure handler that reconnects to a restarted worker
(`update_server_def`), a task-state poller, and one closure thread per worker,
which re-creates a recovered worker's resources. When such a call returns while
the interpreter is shutting down, Python 3.11 ends the thread by unwinding it
through C++ frames, and the process aborts (SIGABRT: "terminate called after
throwing an instance of ''", "FATAL: exception not rethrown") after training
completed. This was seen on TF 2.15 when a worker was restarted near the end of
training: the chief recorded completion, then died with 134, and was restarted.

`release_coordinator` asks those threads to stop and waits for them, up to a
bound, before the chief's role returns. It relies on private attributes of
`tensorflow.python.distribute.coordinator.cluster_coordinator` (the same from
TF 2.15 to 2.21), all in `trainexec.keras.compat.coordinator` (its inventory says
what each is for); where they are missing it does nothing.

Example:
    ```python
    release_coordinator(strategy)  # after the last save of a PSS chief
    ```
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from trainexec.clock import Clock, SystemClock
from trainexec.keras.compat.coordinator import (CLOSURE_THREAD_PREFIX, coordinator_cluster,
                                                stop_coordinator_threads)

__all__ = ["RELEASE_SECS", "release_coordinator"]

logger = logging.getLogger(__name__)

# Long enough for a reconnection to a worker restarted just before the end (one
# connection attempt may take 5 s under trainexec's keepalive settings, which set
# gRPC's minimum connect timeout, grpc.min_reconnect_backoff_ms).
RELEASE_SECS = 15.0


def release_coordinator(strategy: Any, timeout_secs: float = RELEASE_SECS,
                        clock: Clock | None = None) -> bool:
    """Stops `strategy`'s coordinator threads; True when none is left running (or
    there is no coordinator), False when one still ran at the bound (logged)."""
    cluster = coordinator_cluster(strategy)
    if cluster is None:
        return True
    clock = clock or SystemClock()
    deadline = clock.now() + timeout_secs
    handler_thread, wake = stop_coordinator_threads(cluster)
    busy = []
    if handler_thread is not None:
        # Wakes the handler; set again while waiting, as it clears `due` after a
        # reconnection unless it saw the flag above down.
        while handler_thread.is_alive() and clock.now() < deadline:
            wake()
            handler_thread.join(min(0.5, max(0.0, deadline - clock.now())))
        if handler_thread.is_alive():
            busy.append(handler_thread.name)
    for thread in threading.enumerate():
        if thread.name.startswith(CLOSURE_THREAD_PREFIX):
            thread.join(max(0.0, deadline - clock.now()))
            if thread.is_alive():
                busy.append(thread.name)
    if busy:
        logger.warning("TensorFlow's coordinator threads %s still run %gs after training "
                       "ended (a reconnection to a worker); if one returns while Python "
                       "exits, the process aborts (134), and a restarted chief then ends "
                       "at once, max_steps being saved", ", ".join(busy), timeout_secs)
    return not busy
