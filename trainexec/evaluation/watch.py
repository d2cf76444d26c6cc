"""Waiting for a directory to change: inotify where it works, sleeping elsewhere.

An evaluator waits for the next checkpoint. Sleeping a fixed poll interval
makes it pick a checkpoint up half an interval late on average; watching the
directory wakes it as soon as a file there is closed after writing or renamed
into it (TensorFlow renames a checkpoint's files and its `checkpoint` state
file into place; Keras writes `.weights.h5` / `.keras` files in place). A wake
only makes the loop look again: whether a checkpoint is complete is still
decided by its files (`trainexec.records.checkpoints`), and the loop still looks every
poll interval, so nothing depends on an event arriving.

inotify is reached through the C library with `ctypes`: Linux only, no
dependency to install. Remote paths (`gs://`, `hdfs://`, anything with a
scheme), other systems, a directory that does not exist yet and a kernel out
of watches all fall back to sleeping, through the injected `Clock`. On a
network file system (NFS, a FUSE mount) inotify sees only this host's writes,
never another host's: the loop's poll interval is what picks those up, and the
waiter says so once.

Example:
    ```python
    waiter = waiter_for("/models/run1", SystemClock())
    waiter.wait(1.0)   # returns after 1 s, or at once when a file lands there
    waiter.close()
    ```
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import select
import struct
import sys
from typing import Protocol

from trainexec.clock import Clock, SystemClock

__all__ = ["DirectoryWaiter", "DirectoryWatcher", "SleepWaiter", "Waiter",
           "WatchUnavailable", "waiter_for"]

logger = logging.getLogger(__name__)

# From <sys/inotify.h>.
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_TO = 0x00000080
_IN_DELETE_SELF = 0x00000400
_IN_MOVE_SELF = 0x00000800
_IN_IGNORED = 0x00008000
_IN_ONLYDIR = 0x01000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0o2000000)
# A file written and closed, or renamed in; the directory itself going away.
_MASK = _IN_CLOSE_WRITE | _IN_MOVED_TO | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of name


class WatchUnavailable(OSError):
    """inotify cannot watch this directory (not Linux, not local, no watches left)."""


def _libc():
    if not sys.platform.startswith("linux"):
        raise WatchUnavailable(f"inotify is Linux only (this is {sys.platform})")
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        raise WatchUnavailable("the C library has no inotify_init1")
    libc.inotify_add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
    return libc


class DirectoryWatcher:
    """An inotify watch on one local directory (not its sub-directories).

    Raises WatchUnavailable when the directory cannot be watched.
    """

    def __init__(self, directory: str) -> None:
        libc = _libc()
        self.directory = directory
        self._fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self._fd < 0:
            code = ctypes.get_errno()
            raise WatchUnavailable(code, f"inotify_init1: {os.strerror(code)}")
        if libc.inotify_add_watch(self._fd, os.fsencode(directory), _MASK) < 0:
            code = ctypes.get_errno()
            os.close(self._fd)
            self._fd = -1
            raise WatchUnavailable(code, f"inotify_add_watch {directory}: "
                                   f"{os.strerror(code)}")
        self.alive = True  # False once the directory was deleted or moved

    def wait(self, timeout: float) -> bool:
        """Blocks until something changed in the directory (True) or `timeout`
        seconds passed (False). Events are drained: one wake per batch."""
        if self._fd < 0 or not self.alive:
            return False
        ready, _, _ = select.select([self._fd], [], [], max(timeout, 0.0))
        if not ready:
            return False
        self._drain()
        return True

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return
            except OSError as err:
                if err.errno == errno.EINTR:
                    continue
                raise
            offset = 0
            while offset + _EVENT.size <= len(data):
                _, mask, _, length = _EVENT.unpack_from(data, offset)
                if mask & (_IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF):
                    self.alive = False  # the watch is gone with the directory
                offset += _EVENT.size + length

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class Waiter(Protocol):
    """How a loop waits between looks at a directory."""

    def wait(self, secs: float) -> None:
        """Returns after `secs` seconds, or sooner when the directory changed."""

    def close(self) -> None:
        """Releases what the waiter holds."""


class SleepWaiter:
    """Waits by sleeping on a clock (tests pass a fake one)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    def wait(self, secs: float) -> None:
        self._clock.sleep(secs)

    def close(self) -> None:
        pass


class DirectoryWaiter:
    """Waits on an inotify watch of `directory`, set up (again) once the
    directory exists; sleeps where it cannot watch."""

    def __init__(self, directory: str, clock: Clock | None = None) -> None:
        self.directory = directory
        self._clock = clock or SystemClock()
        self._watcher: DirectoryWatcher | None = None
        self._unavailable = False
        self.wakes = 0  # waits cut short by a change (for tests and benchmarks)

    @property
    def watching(self) -> bool:
        return self._watcher is not None and self._watcher.alive

    def _watch(self) -> DirectoryWatcher | None:
        if self._watcher is not None and not self._watcher.alive:
            self._watcher.close()  # the directory went away: watch its successor
            self._watcher = None
        if self._watcher is None and not self._unavailable and os.path.isdir(self.directory):
            try:
                self._watcher = DirectoryWatcher(self.directory)
            except (WatchUnavailable, OSError) as err:
                if getattr(err, "errno", None) not in (errno.ENOENT, errno.ENOTDIR):
                    self._unavailable = True  # no inotify here: sleep from now on
                    logger.info("Not watching %s for new checkpoints (%s); looking "
                                "every poll interval instead", self.directory, err)
        return self._watcher

    def wait(self, secs: float) -> None:
        watcher = self._watch()
        if watcher is None:
            self._clock.sleep(secs)
        elif watcher.wait(secs):
            self.wakes += 1

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None


_TOLD: set[str] = set()  # directories whose polling was explained


def waiter_for(directory: str, clock: Clock | None = None, poll_secs: float | None = None
               ) -> Waiter:
    """A `DirectoryWaiter` for a local directory on the real clock; otherwise
    (a remote path, a fake clock) a `SleepWaiter`. Says once, at INFO, when
    another host's writes there are picked up by polling only."""
    from trainexec.records.storage import storage_of

    clock = clock or SystemClock()
    local = "://" not in str(directory)
    storage = storage_of(str(directory))
    if not storage.inotify_sees_other_hosts and str(directory) not in _TOLD:
        _TOLD.add(str(directory))
        logger.info("%s is on %s: other hosts' new checkpoints are found by looking every "
                    "%s (inotify does not see them)%s", directory, storage.describe(),
                    f"{poll_secs:g}s" if poll_secs else "poll interval",
                    f", and may show up to {storage.visibility_secs:.0f}s late (the file "
                    "system's caches)" if storage.visibility_secs else "")
    if local and type(clock) is SystemClock:
        return DirectoryWaiter(os.fspath(directory), clock)
    return SleepWaiter(clock)
