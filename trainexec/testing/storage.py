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

It needs `bindfs` and `/dev/fuse`: `unavailable()` says why not.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import shutil
import subprocess
from typing import Any, Callable, Protocol, Sequence

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
        """Makes the backing directory and the mount point; returns the directories
        it made that the bed removes afterwards (the mount point, if it made it)."""
        os.makedirs(self.backing, exist_ok=True)
        if os.path.isdir(self.mount_point):
            return []
        os.makedirs(self.mount_point)
        return [self.mount_point]

    def mount_argv(self) -> list[str]:
        return ["bindfs", "-o", self.caching.fuse_options(), self.backing, self.mount_point]

    def mount(self, bed: _Bed, host: str) -> None:
        """Mounts the host's view in the host's mount namespace (bindfs goes on
        in the host's pid namespace and ends with it)."""
        proc = bed.popen(host, self.mount_argv(), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"bindfs on host {host!r} failed ({proc.returncode}): "
                               f"{err.strip()}")
        mounts = bed.run(host, ["cat", "/proc/self/mounts"]).stdout
        if f" {self.mount_point} fuse" not in mounts:
            raise RuntimeError(f"no FUSE view at {self.mount_point} on host {host!r}: "
                               f"{mounts}")


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
