"""Who wrote a file, and whether that process is provably gone.

An evaluator's lease (`trainexec.evaluation.lease`) and an export's temporary directory
(`trainexec.evaluation.export_files.ExportFileManager`) carry their owner: host name, the
machine's boot id and pid namespace (Linux), the pid and the process's start
time, a random token drawn when the process started and, on Kubernetes, the
pod's UID (`TRAINEXEC_POD_UID`, which `trainexec render tfjob` sets from the
pod's `metadata.uid`). Another process can then tell a dead owner from a live
one:

* same host, boot and pid namespace (and pod): the pid is not running, or now
  belongs to a process that started later (a reused pid) -> gone; running ->
  alive;
* the same pod (same UID) on another boot id: its node restarted since -> gone;
* anything else -> unknown, and callers judge by file age. A host name is not a
  node: a pod re-created on another node keeps its host name (and may get the
  same pid), while its predecessor, on a partitioned node, may still be
  writing. Another boot id under the same host name therefore proves nothing
  without the pod's UID, and neither does another pid namespace or pod.

Example:
    ```python
    me = Owner.current()
    name = f".tmp-{uuid}-{me.tag()}"          # owner in a file name
    Owner.from_tag(me.tag()).status()          # (ALIVE, "...") while this runs
    ```
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import uuid

__all__ = ["ALIVE", "GONE", "POD_UID_VARIABLE", "UNKNOWN", "Owner", "read_text_or_none"]

ALIVE, GONE, UNKNOWN = "alive", "gone", "unknown"

# The pod's UID, where the pod spec passes it (Kubernetes' downward API:
# `valueFrom: {fieldRef: {fieldPath: metadata.uid}}`).
POD_UID_VARIABLE = "TRAINEXEC_POD_UID"

# Drawn once per process start: two processes never share it, whatever their
# host names, pids and namespaces.
_PROCESS_TOKEN = uuid.uuid4().hex[:12]


def read_text_or_none(path: str) -> str | None:
    """A small file's text, stripped (a /proc or /sys setting, a boot id); None when it
    cannot be read."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _short_hash(text: str | None) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8] if text else ""


def _boot_id() -> str:
    return _short_hash(read_text_or_none("/proc/sys/kernel/random/boot_id"))


def _pod() -> str:
    return _short_hash(os.environ.get(POD_UID_VARIABLE, "").strip() or None)


def _pid_namespace() -> str:
    try:
        return _short_hash(os.readlink("/proc/self/ns/pid"))
    except OSError:
        return ""


def _start_ticks(pid: int) -> int | None:
    """When `pid` started (clock ticks after boot, Linux), or None if unknown."""
    stat = read_text_or_none(f"/proc/{pid}/stat")
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
    stat = read_text_or_none(f"/proc/{pid}/stat")
    return stat is None or stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]  # a zombie is gone


@dataclasses.dataclass(frozen=True)
class Owner:
    """A process: `host`, `boot` and `pid_namespace` (short hashes, "" when
    unknown), `pid`, `started` (its start time in ticks, None if unknown),
    `pod` (a short hash of the pod's UID, "" outside Kubernetes or when the
    pod spec does not pass it) and `token` (random, one per process start; ""
    in records written before tokens were kept)."""

    host: str
    boot: str
    pid_namespace: str
    pid: int
    started: int | None
    pod: str = ""
    token: str = ""

    @classmethod
    def current(cls) -> "Owner":
        pid = os.getpid()
        return cls(socket.gethostname(), _boot_id(), _pid_namespace(), pid,
                   _start_ticks(pid), _pod(), _PROCESS_TOKEN)

    def tag(self) -> str:
        """The owner in a form fit for a file name:
        `pid.started@host~boot~ns~pod~token`."""
        return (f"{self.pid}.{self.started if self.started is not None else 'x'}@"
                f"{self.host}~{self.boot or 'x'}~{self.pid_namespace or 'x'}"
                f"~{self.pod or 'x'}~{self.token or 'x'}")

    @classmethod
    def from_tag(cls, tag: str) -> "Owner | None":
        """The owner a `tag()` names (also the older `pid.started@host~boot~ns`)."""
        try:
            process, _, machine = tag.partition("@")
            pid, _, started = process.partition(".")
            parts = machine.split("~")
            if len(parts) >= 5:
                host, boot, namespace, pod, token = ("~".join(parts[:-4]), *parts[-4:])
            else:
                host, boot, namespace = machine.rsplit("~", 2)
                pod = token = "x"
            return cls(host, "" if boot == "x" else boot,
                       "" if namespace == "x" else namespace, int(pid),
                       None if started == "x" else int(started),
                       "" if pod == "x" else pod, "" if token == "x" else token)
        except ValueError:
            return None

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host}"

    def is_this_process(self) -> bool:
        me = Owner.current()
        if self.token and me.token and self.token != me.token:
            return False
        return (self.host, self.pid, self.pid_namespace, self.boot, self.pod) == (
            me.host, me.pid, me.pid_namespace, me.boot, me.pod) and (
            self.started is None or me.started is None or self.started == me.started)

    def status(self) -> tuple[str, str]:
        """(ALIVE | GONE | UNKNOWN, why)."""
        me = Owner.current()
        if self.host != me.host:
            return UNKNOWN, f"host {self.host} is not this host ({me.host})"
        if self.pod != me.pod:
            return UNKNOWN, (f"{self.describe()} ran in another pod (a host name is not a "
                             "node: a re-created pod keeps it)")
        if self.boot and me.boot and self.boot != me.boot:
            if self.pod:
                return GONE, (f"the node of {self.describe()} (the same pod) has "
                              "restarted since it wrote it")
            return UNKNOWN, (f"{self.describe()} ran on another boot of host {self.host}, "
                             "or on another machine of that name")
        if self.pid_namespace and me.pid_namespace and self.pid_namespace != me.pid_namespace:
            return UNKNOWN, f"{self.describe()} runs in another pid namespace (container)"
        if not _pid_running(self.pid):
            return GONE, f"{self.describe()} is no longer running"
        now_started = _start_ticks(self.pid)
        if self.started is not None and now_started is not None and now_started != self.started:
            return GONE, (f"{self.describe()} has exited (that pid now belongs to a "
                          "process started later)")
        return ALIVE, f"{self.describe()} is running"
