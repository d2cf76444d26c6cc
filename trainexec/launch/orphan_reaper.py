"""The orphan reaper: a process that SIGKILLs a cluster's task groups if the launcher dies.

One per started cluster (its log lines call it "the watcher process"). The
launcher tells it, over a pipe, each task group started ("+<pgid>") and each
group swept ("-<pgid>"); it sees the launcher's end, however it ended (even
SIGKILL), as EOF on that pipe, and then SIGKILLs every group not swept yet, so
no task is left orphaned.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import weakref

__all__ = ["OrphanReaper", "after_fork_in_child"]

# The launcher's records keep the one logger name they had before the split.
logger = logging.getLogger("trainexec.launch")

_WATCHER_EXIT_SECS = 5.0

# The watcher: reads "+<pgid>" (a task group started) and "-<pgid>" (swept) lines;
# EOF means the launcher has ended, however it ended: then it SIGKILLs the groups left.
_WATCHER_SOURCE = """\
import os, signal, sys
for name in ("SIGINT", "SIGTERM", "SIGHUP"):
    signal.signal(getattr(signal, name), signal.SIG_IGN)
groups = set()
for line in sys.stdin.buffer:
    try:
        pgid = int(line[1:])
    except ValueError:
        continue
    (groups.add if line[:1] == b"+" else groups.discard)(pgid)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""
_REAPERS: "weakref.WeakSet[OrphanReaper]" = weakref.WeakSet()


class OrphanReaper:
    """The watcher process that SIGKILLs a cluster's task groups if the launcher dies first.

    Only the launcher holds the pipe's write end (close-on-exec, and closed in
    forked children), so the watcher reads EOF exactly when the launcher is gone;
    it runs in its own session and ignores SIGINT, SIGTERM and SIGHUP. It starts
    on the first `add` and ends on `close` (or with the launcher).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._fd: int | None = None
        self._proc: subprocess.Popen | None = None
        _REAPERS.add(self)

    def add(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)
            if self._fd is not None:
                self._send(self._fd, f"+{pgid}\n")
            if self._fd is None:  # none yet, or it has died: a new one learns every group
                self._start()

    def forget(self, pgid: int) -> None:
        """Before the group's leader is reaped: from then on its id may be reused."""
        with self._lock:
            self._groups.discard(pgid)
            if self._fd is not None:
                self._send(self._fd, f"-{pgid}\n")

    def close(self) -> None:
        """Ends the watcher (it then kills any group not forgotten) and reaps it."""
        with self._lock:
            fd, proc, self._fd, self._proc = self._fd, self._proc, None, None
        if fd is not None:
            os.close(fd)
        if proc is not None:
            try:
                proc.wait(_WATCHER_EXIT_SECS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _start(self) -> None:
        try:
            read, write = os.pipe()
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _WATCHER_SOURCE], stdin=read,
                    stdout=subprocess.DEVNULL, start_new_session=True)
            except BaseException:
                os.close(write)
                raise
            finally:
                os.close(read)
        except (OSError, ValueError) as err:
            logger.warning("could not start the watcher process (%s): if the launcher is "
                           "killed, processes its tasks started may outlive it", err)
            return
        self._fd = write
        self._send(write, "".join(f"+{pgid}\n" for pgid in sorted(self._groups)))

    def _send(self, fd: int, lines: str) -> None:
        """Writes `lines` to the watcher's pipe `fd` (this reaper's `_fd`)."""
        try:
            os.write(fd, lines.encode())
        except OSError as err:  # it died: the next add starts another
            logger.warning("the watcher process has ended (%s): another starts with the "
                           "next task started", err)
            os.close(fd)
            self._fd = None
            if self._proc is not None:
                self._proc.poll()

    def _after_fork_in_child(self) -> None:
        """In a forked copy of the launcher: the pipe and the watcher are the parent's."""
        self._lock = threading.Lock()
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._proc, self._groups = None, None, set()


def after_fork_in_child() -> None:
    """In a forked copy of the launcher: no orphan reaper is its own."""
    for reaper in list(_REAPERS):
        reaper._after_fork_in_child()
