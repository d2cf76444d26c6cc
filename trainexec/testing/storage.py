"""Shared storage as a cluster's hosts see it: one directory, a cached view per host.

A `SharedDir` is one backing directory on this machine and, on every host of a
`trainexec.testing.netns.TestBed`, a FUSE view of it (`bindfs`) mounted at the
same path (`mount_point`) in that host's own mount namespace, with the kernel's
FUSE caches set as an NFS client's are (`NfsCaching`). Programs on the hosts use
`mount_point`; the test reads and writes `backing`, which no cache stands in
front of. As on NFS, a host learns of another host's change only when its
cache lets it, and inotify does not cross hosts (a host's FUSE inodes see that
host's own operations only).

How NFS's client caching (nfs(5)) maps onto FUSE's three timeouts of each view
(`NfsCaching.from_nfs`; the defaults are NFS's defaults at their worst):

* acregmin 3 / acregmax 60 (a file's attributes cached 3 to 60 s) ->
  `attr_timeout` = acregmax: `stat()` (size, mtime) may be up to 60 s old, the
  worst case, for a file that had not changed for a while;
* acdirmin 30 / acdirmax 60 with lookupcache=all (a name's lookup trusted while
  its directory's attributes are cached) -> `entry_timeout` = acdirmax: a name
  is taken to be the file it was up to 60 s ago (a removed file may still be
  seen);
* lookupcache=all also caches negative lookups -> `negative_timeout` = acdirmax
  (0 with lookupcache=positive or none): a name looked up before it existed
  stays absent up to 60 s after that look-up, whoever made it meanwhile.

Where the view is milder than NFS: a read past the cached size refreshes it and
`open()` drops cached pages (much as NFS's close-to-open consistency does),
directory listings are never cached (NFS caches them up to acdirmax), and
bindfs resolves names by path, so a file renamed over another is seen at once
through a cached positive lookup (NFS may serve the old file until the lookup
is revalidated). Locks (fcntl, flock) are local to each host's view, as they are
on NFS without a lock manager shared by the hosts.

Example:
    ```python
    shared = SharedDir(str(tmp_path / "backing"))        # NFS's default caching
    with TestBed(["a", "b"], shared_dir=shared) as bed:
        bed.run("a", ["touch", shared.on_hosts("x")])
        os.path.exists(shared.on_machine(shared.on_hosts("x")))   # True at once
    ```

Faults, as a shared file server gives them: with `faults=True` each host's view is a
`trainexec.testing.faultfs` layer (in place of bindfs, with the same caching), all
following one plan, and `stall(secs)` (every call of every host blocks), `fail(errno, secs)` (`EIO`,
`ESTALE`) and `slow(delay, secs)` play through it; with `size_mb=N` the backing
directory is a tmpfs of N MiB that `fill()` fills (a write that meets the limit is
cut short, `ENOSPC`) and `free()` frees. The test still reads `backing`, the truth.

It needs `bindfs` and `/dev/fuse` (and fusepy for the faults): `unavailable()` says why
not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import glob
import os
import shutil
import subprocess
import sys
import time
from typing import Any, Callable, Protocol, Sequence

from trainexec.testing.faultfs import OPERATIONS, FaultPlan, PlanFile

__all__ = ["NFS_DEFAULTS", "NO_CACHING", "NfsCaching", "SharedDir", "remove_leftovers",
           "unavailable"]

PREFIX = "te"  # the test bed's prefix: its mount point is named as its other parts are
_MOUNT_SUFFIX = "-shared"


class _Bed(Protocol):
    """What `SharedDir.mount` needs of a bed: running a program on one of its hosts
    (`trainexec.testing.netns.TestBed`, which mounts the views, is one)."""

    def popen(self, host: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        ...

    def run(self, host: str, argv: Sequence[str]) -> subprocess.CompletedProcess:
        ...


def unavailable() -> str | None:
    """Why a `SharedDir` cannot be mounted here (None: it can), beside what
    `trainexec.testing.netns.unavailable()` says of the bed itself."""
    if os.geteuid() != 0:
        return "FUSE views in each host's mount namespace need root"
    if shutil.which("bindfs") is None:
        return ("the `bindfs` command is missing (FUSE views of the shared directory): "
                "apt-get install bindfs fuse3")
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (FUSE): load the fuse module or run with --device /dev/fuse"
    return None


@dataclasses.dataclass(frozen=True)
class NfsCaching:
    """How long a host's view trusts what it cached (seconds; 0: not at all).

    The defaults are NFS's defaults at their worst (acregmax 60, acdirmax 60,
    lookupcache=all; see the module doc for the mapping).
    """

    attr_secs: float = 60.0  # a file's attributes (NFS acregmax)
    entry_secs: float = 60.0  # a name -> file lookup (NFS acdirmax)
    negative_secs: float = 60.0  # a name found absent (NFS acdirmax, lookupcache=all)

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"NfsCaching {field.name}={value!r}: use a number of "
                                 f"seconds >= 0")

    @classmethod
    def from_nfs(cls, acregmax: float = 60.0, acdirmax: float = 60.0,
                 lookupcache: str = "all") -> "NfsCaching":
        """The worst case of an NFS mount with these options (nfs(5))."""
        if lookupcache not in ("all", "positive", "pos", "none"):
            raise ValueError(f"lookupcache={lookupcache!r}: use all, positive or none")
        return cls(attr_secs=acregmax,
                   entry_secs=0.0 if lookupcache == "none" else acdirmax,
                   negative_secs=acdirmax if lookupcache == "all" else 0.0)

    def fuse_options(self) -> str:
        return (f"attr_timeout={self.attr_secs:g},entry_timeout={self.entry_secs:g},"
                f"negative_timeout={self.negative_secs:g}")


NFS_DEFAULTS = NfsCaching()
NO_CACHING = NfsCaching(0.0, 0.0, 0.0)


@dataclasses.dataclass(frozen=True)
class SharedDir:
    """One backing directory, seen by every host of a bed at `mount_point`.

    `mount_point` defaults to /tmp/te<pid>-shared (made, and removed, by the bed).
    """

    backing: str
    mount_point: str = ""
    caching: NfsCaching = NFS_DEFAULTS
    # Faults on demand (`stall`, `fail`, `slow`): a `trainexec.testing.faultfs` layer
    # between the backing directory and every view (the file server, for all hosts).
    faults: bool = False
    # A size-limited backing (a tmpfs of this many MiB), which `fill()` fills and
    # `free()` frees: a full disk, where a write that meets the limit is cut short.
    size_mb: int | None = None
    _layer: "_FaultLayer" = dataclasses.field(default_factory=lambda: _FaultLayer(),
                                             compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "backing", os.path.abspath(self.backing))
        if not self.mount_point:
            object.__setattr__(self, "mount_point",
                               f"/tmp/{PREFIX}{os.getpid()}{_MOUNT_SUFFIX}")
        object.__setattr__(self, "mount_point", os.path.abspath(self.mount_point))
        if (self.mount_point == self.backing
                or self.mount_point.startswith(self.backing + os.sep)
                or self.backing.startswith(self.mount_point + os.sep)):
            raise ValueError(f"mount_point {self.mount_point!r} and backing "
                             f"{self.backing!r} must not contain each other")

    # -- paths -------------------------------------------------------------------------
    def on_hosts(self, *parts: str) -> str:
        """A path under the shared directory as programs on the hosts see it."""
        return os.path.join(self.mount_point, *parts)

    def on_machine(self, path_on_hosts: str) -> str:
        """The backing path (what the test reads) of a path on the hosts' view."""
        rel = os.path.relpath(os.path.abspath(path_on_hosts), self.mount_point)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            raise ValueError(f"{path_on_hosts!r} is not under {self.mount_point}")
        return os.path.normpath(os.path.join(self.backing, rel))

    def pod_env(self) -> dict[str, str]:
        """What a program on a host needs in its environment (nothing: a path)."""
        return {}

    # -- for TestBed -------------------------------------------------------------------
    def prepare(self) -> list[str]:
        """Makes the backing directory (a tmpfs of `size_mb`, the fault layer over it)
        and the mount point; returns the directories it made that the bed removes
        afterwards (the mount point, if it made it). `release()` undoes the rest."""
        os.makedirs(self.backing, exist_ok=True)
        self._layer.start(self)
        if os.path.isdir(self.mount_point):
            return []
        os.makedirs(self.mount_point)
        return [self.mount_point]

    def release(self) -> None:
        """Unmounts the fault layer and the size-limited backing (idempotent; the bed
        calls it once every host has ended)."""
        self._layer.stop()

    def mount_argv(self) -> list[str]:
        if self.faults:  # the fault layer is the view, with the same caching
            return [sys.executable, "-m", "trainexec.testing.faultfs", self.backing,
                    self.mount_point, "--control", self._layer.control, "-o",
                    self.caching.fuse_options()]
        return ["bindfs", "-o", self.caching.fuse_options(), self.backing, self.mount_point]

    # -- faults (with faults=True; fill and free with size_mb) ------------------------------
    def stall(self, secs: float) -> None:
        """Every file-system call of every host blocks for `secs` (a stalled server)."""
        self._layer.plan(self, FaultPlan.lasting("stall", secs))

    def fail(self, errno_: int, secs: float, ops: Sequence[str] = OPERATIONS) -> None:
        """The calls `ops` fail with `errno_` (EIO, ESTALE) for `secs`."""
        self._layer.plan(self, FaultPlan.lasting("errors", secs, ops=ops, errno_=errno_))

    def slow(self, delay_secs: float, secs: float) -> None:
        """Every call waits `delay_secs` first, for `secs`."""
        self._layer.plan(self, FaultPlan.lasting("slow", secs, delay_secs=delay_secs))

    def clear(self) -> None:
        self._layer.plan(self, None)

    def fill(self) -> int:
        """Fills the size-limited backing to its last byte (a full disk); returns how
        many bytes the filler took."""
        return self._layer.fill(self)

    def free(self) -> None:
        """Frees what `fill()` took."""
        self._layer.free(self)

    def mount(self, bed: _Bed, host: str) -> None:
        """Mounts the host's view in the host's mount namespace (bindfs, or the fault
        layer, goes on in the host's pid namespace and ends with it)."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (_PACKAGE_PARENT, os.environ.get("PYTHONPATH")) if p))
        proc = bed.popen(host, self.mount_argv(), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=env)
        if self.faults:  # it serves in the foreground: wait for its mount instead
            deadline = time.monotonic() + 60
            while f" {self.mount_point} fuse" not in bed.run(
                    host, ["cat", "/proc/self/mounts"]).stdout:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read() if proc.stderr else ""
                    raise RuntimeError(f"the fault layer on host {host!r} did not mount "
                                       f"({proc.poll()}): {err.strip()[-500:]}")
                time.sleep(0.1)
            if proc.stderr:
                proc.stderr.close()
            return
        _, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"bindfs on host {host!r} failed ({proc.returncode}): "
                               f"{err.strip()}")
        mounts = bed.run(host, ["cat", "/proc/self/mounts"]).stdout
        if f" {self.mount_point} fuse" not in mounts:
            raise RuntimeError(f"no FUSE view at {self.mount_point} on host {host!r}: "
                               f"{mounts}")


class _FaultLayer:
    """What `SharedDir` keeps for its faults: the tmpfs under the backing directory, the
    plan file every host's fault layer follows, the filler (module doc)."""

    def __init__(self) -> None:
        self._tmpfs: str | None = None
        self.control = ""

    def start(self, shared: SharedDir) -> None:
        if shared.size_mb is not None and self._tmpfs is None:
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={int(shared.size_mb)}m",
                            "tmpfs", shared.backing], check=True, capture_output=True)
            self._tmpfs = shared.backing
        if shared.faults and not self.control:
            self.control = f"{shared.backing}.faults.json"
            PlanFile.write(self.control, None)

    def plan(self, shared: SharedDir, plan: FaultPlan | None) -> None:
        if not self.control:
            raise RuntimeError("faults need SharedDir(faults=True), inside its bed")
        PlanFile.write(self.control, plan)

    def fill(self, shared: SharedDir) -> int:
        if self._tmpfs is None:
            raise RuntimeError("fill() needs SharedDir(size_mb=...), inside its bed")
        written = 0
        fd = os.open(os.path.join(shared.backing, _FILLER),
                     os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for size in (1 << 20, 4096, 512, 1):  # to the last partial block
                chunk = b"\0" * size
                while True:
                    try:
                        written += os.write(fd, chunk)
                    except OSError as err:
                        if err.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)
        return written

    def free(self, shared: SharedDir) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(shared.backing, _FILLER))

    def stop(self) -> None:
        if self.control:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.control)
        if self._tmpfs is not None:
            subprocess.run(["umount", "-l", self._tmpfs], capture_output=True)
        self._tmpfs, self.control = None, ""


_FILLER = ".trainexec-disk-filler"
# Where trainexec is, for the fault layer's process on each host.
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def remove_leftovers(alive: Callable[[int], bool]) -> list[str]:
    """Removes the default mount points (/tmp/te<pid>-shared, empty directories in
    this machine's namespace) of beds whose process is gone."""
    removed = []
    for path in glob.glob(f"/tmp/{PREFIX}*{_MOUNT_SUFFIX}"):
        owner = os.path.basename(path)[len(PREFIX):-len(_MOUNT_SUFFIX)]
        if owner.isdigit() and not alive(int(owner)):
            try:
                os.rmdir(path)
            except OSError:
                continue
            removed.append(path)
    return removed
