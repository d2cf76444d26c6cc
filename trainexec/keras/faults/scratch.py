"""Temporary directories a Keras task makes, and removing them when it leaves early.

A MultiWorkerMirroredStrategy peer writes its part of each checkpoint to a
temporary directory (`trainexec.keras.fit.training`), and TensorFlow's preemption
handler keeps a throwaway counter in another (`trainexec.keras.faults.preemption`).
Both are removed when training returns. A peer that leaves from another
thread (`trainexec.tasks.peer_watchdog`, which ends the process at once)
removes what is still registered here first.

Example:
    ```python
    directory = make("trainexec-worker-0-checkpoints-")   # registered
    ...
    remove(directory)                                     # removed, unregistered
    ```
"""

from __future__ import annotations

import shutil
import tempfile
import threading

__all__ = ["make", "registered", "remove", "remove_all"]

_lock = threading.Lock()
_directories: set[str] = set()


def make(prefix: str) -> str:
    """A new temporary directory (`tempfile.mkdtemp`), registered."""
    directory = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _directories.add(directory)
    return directory


def remove(directory: str) -> None:
    """Removes `directory` (whatever is in it) and forgets it."""
    with _lock:
        _directories.discard(directory)
    shutil.rmtree(directory, ignore_errors=True)


def registered() -> set[str]:
    with _lock:
        return set(_directories)


def remove_all() -> None:
    """Removes every registered directory."""
    for directory in registered():
        remove(directory)
