"""How often a non-chief worker re-checks that the chief has initialized the model.

A worker's `MonitoredTrainingSession` waits for the chief to initialize (or
restore) the variables on the ps. TensorFlow re-checks every 30 seconds, a
constant that neither `RunConfig` nor `Estimator.train` exposes. A worker
that reaches that check one moment before the chief is ready (a chief pod
scheduled late, a slow import on a busy machine) therefore sits idle for 30
seconds, and in a short run it misses training altogether.

`model_readiness_checks_every(secs)` makes every `SessionManager` created in
its block re-check every `secs` instead, unless its creator chose a value.
TensorFlow logs "Waiting for model to be ready" on every check; the block
lets that line through at most once per `LOG_EVERY_SECS`. It changes nothing
else and restores TensorFlow's defaults on exit. The patch itself (TensorFlow's private
`SessionManager.__init__`) is `trainexec.estimator_trainer.compat.session_manager`'s.

Example:
    ```python
    with model_readiness_checks_every(1.0):
        estimator.train(input_fn, max_steps=1000)
    ```
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Callable, Iterator

from trainexec.estimator_trainer.compat.session_manager import patch_recovery_wait_secs

__all__ = ["model_readiness_checks_every"]

logger = logging.getLogger(__name__)

LOG_EVERY_SECS = 30.0
WAITING_MESSAGE = "Waiting for model to be ready"

_lock = threading.Lock()
_active = 0  # blocks currently inside; the patch stays while any is
_restore: Callable[[], None] | None = None  # puts TensorFlow's SessionManager back


class _WaitingLogLimiter(logging.Filter):
    """Passes TensorFlow's "Waiting for model to be ready" once per `every` seconds."""

    def __init__(self, every: float = LOG_EVERY_SECS, now=time.monotonic) -> None:
        super().__init__()
        self.every, self._now, self._last = every, now, None

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(WAITING_MESSAGE):
            return True
        now = self._now()
        if self._last is not None and now - self._last < self.every:
            return False
        self._last = now
        return True


_limiter = _WaitingLogLimiter()


@contextlib.contextmanager
def model_readiness_checks_every(secs: float) -> Iterator[None]:
    """Within the block, new SessionManagers re-check model readiness every `secs`.

    The change is process-wide while any block is active (blocks may overlap
    across threads; the first one's interval applies until the last one ends).
    """
    if secs <= 0:
        raise ValueError(f"secs is {secs!r}: expected a number of seconds > 0")
    _enter(secs)
    try:
        yield
    finally:
        _exit()


def _enter(secs: float) -> None:
    global _active, _restore
    with _lock:
        _active += 1
        if _active > 1:
            return
        _restore = patch_recovery_wait_secs(secs)
        if _restore is not None:
            logging.getLogger("tensorflow").addFilter(_limiter)


def _exit() -> None:
    global _active, _restore
    with _lock:
        _active -= 1
        if _active == 0 and _restore is not None:
            _restore()
            _restore = None
            logging.getLogger("tensorflow").removeFilter(_limiter)
