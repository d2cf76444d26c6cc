"""Injectable time: loops that wait take a `Clock` so tests can step time.

Example:
    ```python
    clock = SystemClock()
    start = clock.now()
    clock.sleep(0.5)
    ```
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SystemClock"]


class Clock(Protocol):
    """The two things a waiting loop needs from time."""

    def now(self) -> float:
        """Seconds on a monotonic scale."""

    def sleep(self, secs: float) -> None:
        """Blocks for `secs` seconds."""


class SystemClock:
    """The real clock: `time.monotonic` and `time.sleep`."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, secs: float) -> None:
        if secs > 0:
            time.sleep(secs)
