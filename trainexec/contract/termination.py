"""Whether this process has been asked to stop (SIGTERM): a preemption in progress.

The SIGTERM handlers of a training task (`trainexec.keras.faults.preemption`) note the signal
here; the exit hook (`trainexec.contract.exit_codes.install_exit_hook`) reads it, so
that an error a preemption runs into (the coordination service of a cut-off peer
failing inside TensorFlow's preemption handler, say) ends the task as preempted, which
a restart policy retries, never as the user's error.

Example:
    ```python
    signal.signal(signal.SIGTERM, lambda *_: note_termination_requested())
    ...
    if termination_requested():  # the task is going away: whatever failed, restart it
        cause = PREEMPTED
    ```
"""

from __future__ import annotations

import threading

__all__ = ["forget_termination_request", "note_termination_requested",
           "termination_requested"]

_requested = threading.Event()


def note_termination_requested() -> None:
    """This process got SIGTERM (safe to call from a signal handler)."""
    _requested.set()


def termination_requested() -> bool:
    """Whether this process got SIGTERM since it started (or since it was forgotten)."""
    return _requested.is_set()


def forget_termination_request() -> None:
    """Forgets an earlier SIGTERM: a process that went on after it (a test, say)."""
    _requested.clear()
