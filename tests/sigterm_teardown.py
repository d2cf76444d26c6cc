"""A SIGTERM ends a pytest run the way Ctrl-C does, so its fixtures are torn down.

Signals' default action ends a process on the spot: no `finally`, no fixture
finalizer. A CI job that times out, or anyone stopping `./scripts/test.sh` with
`kill`, then left behind what the running test had made (network namespaces, a bridge,
FUSE mounts, a Slurm cluster's daemons, the bed's shared directory). Raised as
KeyboardInterrupt instead, the signal unwinds the test, pytest runs every finalizer and
reports the run as interrupted (exit code 2). A second SIGTERM ends the process at once,
as the default would (for a teardown that hangs).
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any


def _interrupt(signum: int, frame: Any) -> None:
    del frame
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise KeyboardInterrupt(f"signal {signum} (SIGTERM): ending the run after its "
                            "teardown")


def _default_in_forked_child() -> None:
    # A child forked without exec (multiprocessing, os.fork in a test) keeps Python's
    # handlers: give it the default back, as exec would.
    if signal.getsignal(signal.SIGTERM) is _interrupt:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


_installed = False


def install() -> None:
    """Turns this process's SIGTERM into KeyboardInterrupt, where nothing else handles
    it (a handler someone installed stays); only from the main thread, where Python
    runs handlers."""
    global _installed
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return
    signal.signal(signal.SIGTERM, _interrupt)
    if not _installed:
        os.register_at_fork(after_in_child=_default_in_forked_child)
        _installed = True
