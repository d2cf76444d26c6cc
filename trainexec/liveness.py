"""Who wrote a file, and whether that process is provably gone.

An evaluator's lease (`trainexec.evaluation.lease`) and an export's temporary directory
(`trainexec.evaluation.export_files.ExportFileManager`) carry their owner: host name, the
machine's boot id and pid namespace (Linux), the pid and the process's start
time. Another process can then tell a dead owner from a live one:

* same host, boot and pid namespace: the pid is not running, or now belongs
  to a process that started later (a reused pid) -> gone; running -> alive;
* same host, another boot id: the machine restarted since -> gone;
* another host or pid namespace (another container): nobody here can see that
  process -> unknown; callers then judge by file age.

Example::

    me = Owner.current()
    name = f".tmp-{uuid}-{me.tag()}"          # owner in a file name
    Owner.from_tag(me.tag()).status()          # (ALIVE, "...") while this runs
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket

__all__ = ["ALIVE", "GONE", "UNKNOWN", "Owner"]

ALIVE, GONE, UNKNOWN = "alive", "gone", "unknown"


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _short_hash(text: str | None) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8] if text else ""


def _boot_id() -> str:
    return _short_hash(_read("/proc/sys/kernel/random/boot_id"))


def _pid_namespace() -> str:
    try:
        return _short_hash(os.readlink("/proc/self/ns/pid"))
    except OSError:
        return ""


def _start_ticks(pid: int) -> int | None:
    """When `pid` started (clock ticks after boot, Linux), or None if unknown."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return None
    try:  # the command name (2nd field) may hold spaces: split after its ')'
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def _pid_running(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, but running
    stat = _read(f"/proc/{pid}/stat")
    return stat is None or stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]  # a zombie is gone


@dataclasses.dataclass(frozen=True)
class Owner:
    """A process: `host`, `boot` and `pid_namespace` (short hashes, "" when
    unknown), `pid`, and `started` (its start time in ticks, None if unknown)."""

    host: str
    boot: str
    pid_namespace: str
    pid: int
    started: int | None

    @classmethod
    def current(cls) -> "Owner":
        pid = os.getpid()
        return cls(socket.gethostname(), _boot_id(), _pid_namespace(), pid, _start_ticks(pid))

    def tag(self) -> str:
        """The owner in a form fit for a file name: `pid.started@host~boot~ns`."""
        return (f"{self.pid}.{self.started if self.started is not None else 'x'}@"
                f"{self.host}~{self.boot or 'x'}~{self.pid_namespace or 'x'}")

    @classmethod
    def from_tag(cls, tag: str) -> "Owner | None":
        try:
            process, _, machine = tag.partition("@")
            pid, _, started = process.partition(".")
            host, boot, namespace = machine.rsplit("~", 2)
            return cls(host, "" if boot == "x" else boot,
                       "" if namespace == "x" else namespace, int(pid),
                       None if started == "x" else int(started))
        except ValueError:
            return None

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host}"

    def is_this_process(self) -> bool:
        me = Owner.current()
        return (self.host, self.pid, self.pid_namespace, self.boot) == (
            me.host, me.pid, me.pid_namespace, me.boot) and (
            self.started is None or me.started is None or self.started == me.started)

    def status(self) -> tuple[str, str]:
        """(ALIVE | GONE | UNKNOWN, why)."""
        me = Owner.current()
        if self.host != me.host:
            return UNKNOWN, f"host {self.host} is not this host ({me.host})"
        if self.boot and me.boot and self.boot != me.boot:
            return GONE, f"host {self.host} has restarted since {self.describe()} wrote it"
        if self.pid_namespace and me.pid_namespace and self.pid_namespace != me.pid_namespace:
            return UNKNOWN, f"{self.describe()} runs in another pid namespace (container)"
        if not _pid_running(self.pid):
            return GONE, f"{self.describe()} is no longer running"
        now_started = _start_ticks(self.pid)
        if self.started is not None and now_started is not None and now_started != self.started:
            return GONE, (f"{self.describe()} has exited (that pid now belongs to a "
                          "process started later)")
        return ALIVE, f"{self.describe()} is running"
