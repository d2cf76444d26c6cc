"""A file system that passes every call through to a directory, and misbehaves on demand:
what a network file server does to its clients when it stalls, fails or slows down.

`python -m trainexec.testing.faultfs ROOT MOUNT_POINT --control FILE [-o OPTIONS]`
mounts ROOT at MOUNT_POINT (FUSE, through fusepy; root only; `-o` takes FUSE's cache
options, `attr_timeout=60,entry_timeout=60,negative_timeout=60` for NFS's) and, while
the `FaultPlan` in FILE holds, each call of its `ops`:

* `stall`: blocks until the plan ends (a hard-mounted NFS client whose server stopped
  answering: every call hangs, none fails), except for a caller being killed, whose
  call then fails at once, as an NFS client's blocked call does on SIGKILL (FUSE itself
  waits out a call its server has taken);
* `errors`: fails with `errno_` (`EIO`, or `ESTALE`: the server lost the file handle);
* `slow`: waits `delay_secs`, then is served.

A full disk is not a plan: the directory under it is a size-limited file system that is
filled (`trainexec.testing.storage.SharedDir`), so that a write that meets the limit is
cut short where it is, as on a real disk.

`trainexec.testing.storage.SharedDir(faults=True)` mounts this file system as each
host's NFS-like view (in place of bindfs), all of them following one plan file, read
again when it changes; its `stall()`, `fail()`, `slow()`, `fill()` and `free()` are
the faults.

Example:
    ```python
    shared = SharedDir(str(tmp_path / "backing"), faults=True)
    with TestBed(["a", "b"], shared_dir=shared) as bed:
        shared.fail(errno.EIO, secs=10)       # every call of every host: EIO for 10 s
    ```
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import sys
import threading
import time
from typing import Any, Mapping, Sequence

__all__ = ["MODES", "OPERATIONS", "FaultPlan", "PlanFile", "being_killed", "main"]

MODES = ("stall", "errors", "slow")
# The calls a plan may pick (what a program's reads and writes become).
OPERATIONS = ("getattr", "readdir", "open", "create", "read", "write", "truncate", "flush",
              "fsync", "release", "rename", "unlink", "mkdir", "rmdir", "link", "utimens",
              "chmod", "statfs", "access")


@dataclasses.dataclass(frozen=True)
class FaultPlan:
    """Until `until` (wall-clock seconds), each call of `ops` gets `mode`."""

    mode: str
    until: float
    ops: Sequence[str] = OPERATIONS
    errno_: int = errno.EIO
    delay_secs: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"fault mode {self.mode!r}: use one of {', '.join(MODES)}")
        unknown = [op for op in self.ops if op not in OPERATIONS]
        if unknown or not self.ops:
            raise ValueError(f"operations {list(self.ops)}: use some of "
                             f"{', '.join(OPERATIONS)}")
        if self.mode == "slow" and self.delay_secs <= 0:
            raise ValueError("a slow plan needs delay_secs > 0")
        object.__setattr__(self, "ops", tuple(self.ops))

    @classmethod
    def lasting(cls, mode: str, secs: float, **fields: Any) -> "FaultPlan":
        if secs <= 0:
            raise ValueError(f"secs {secs}: a fault lasts a while, give secs > 0")
        return cls(mode, time.time() + secs, **fields)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "until": self.until, "ops": list(self.ops),
                "errno": self.errno_, "delay_secs": self.delay_secs}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "FaultPlan":
        return cls(data["mode"], float(data["until"]), tuple(data["ops"]),
                   int(data["errno"]), float(data["delay_secs"]))


_WRITING = threading.Lock()


class PlanFile:
    """The plan a mounted file system follows, read again when its file changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: tuple[int, int, int] | None = None
        self._plan: FaultPlan | None = None
        self._lock = threading.Lock()

    def plan(self) -> FaultPlan | None:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        # Each write is a new file (os.replace): its inode tells two writes apart that
        # share a file time and a size.
        key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key != self._seen:
                try:
                    with open(self.path) as f:
                        data = json.load(f)
                    self._plan = FaultPlan.from_json(data) if data else None
                    self._seen = key
                except (OSError, ValueError, KeyError):
                    pass  # caught mid-replace: the last plan holds
            return self._plan

    @staticmethod
    def write(path: str, plan: FaultPlan | None) -> None:
        """Replaces the plan (None: no fault) atomically, with a file time of its own.
        Writers of one process take turns (overlapping faults start on threads of their
        own; one temporary name each, so none replaces another's file under it)."""
        tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
        with _WRITING:
            with open(tmp, "w") as f:
                json.dump(plan.to_json() if plan is not None else {}, f)
            os.replace(tmp, path)


_SIGKILL_BIT = 1 << (9 - 1)


def being_killed(pid: int) -> bool:
    """Whether thread `pid` (in this pid namespace) is gone or has SIGKILL pending (its
    process is exiting: an exit_group, a kill)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return True
    pending = int(status.get("SigPnd", "0").strip(), 16) | int(
        status.get("ShdPnd", "0").strip(), 16)
    return bool(pending & _SIGKILL_BIT) or status.get("State", "").strip()[:1] in "ZX"


def _operations(root: str, plans: PlanFile) -> Any:
    """The pass-through file system over `root`, with `plans`' faults (fusepy's
    Operations; imported here so that the module loads without fusepy)."""
    from fuse import FuseOSError, Operations, fuse_get_context

    def faulted(name: str) -> None:
        caller = fuse_get_context()[2]
        while True:
            plan = plans.plan()
            now = time.time()
            if plan is None or now >= plan.until or name not in plan.ops:
                return
            if plan.mode == "errors":
                raise FuseOSError(plan.errno_)
            if plan.mode == "slow":
                time.sleep(plan.delay_secs)
                return
            if caller and being_killed(caller):  # a stalled call a kill interrupts
                raise FuseOSError(errno.EINTR)
            time.sleep(min(0.1, plan.until - now))  # stall: until the plan ends

    def call(name: str, fn: Any, *args: Any) -> Any:
        faulted(name)
        try:
            return fn(*args)
        except OSError as err:
            raise FuseOSError(err.errno or errno.EIO) from err

    class FaultFs(Operations):
        def _full(self, path: str) -> str:
            return os.path.join(root, path.lstrip("/"))

        def access(self, path, mode):
            if not call("access", os.access, self._full(path), mode):
                raise FuseOSError(errno.EACCES)

        def chmod(self, path, mode):
            return call("chmod", os.chmod, self._full(path), mode)

        def chown(self, path, uid, gid):
            return call("chmod", os.chown, self._full(path), uid, gid)

        def getattr(self, path, fh=None):
            st = call("getattr", os.lstat, self._full(path))
            return {key: getattr(st, key) for key in (
                "st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink",
                "st_size", "st_uid", "st_ino")}

        def readdir(self, path, fh):
            return [".", "..", *call("readdir", os.listdir, self._full(path))]

        def readlink(self, path):
            return call("getattr", os.readlink, self._full(path))

        def mkdir(self, path, mode):
            return call("mkdir", os.mkdir, self._full(path), mode)

        def rmdir(self, path):
            return call("rmdir", os.rmdir, self._full(path))

        def unlink(self, path):
            return call("unlink", os.unlink, self._full(path))

        def symlink(self, target, source):
            return call("link", os.symlink, source, self._full(target))

        def link(self, target, source):
            return call("link", os.link, self._full(source), self._full(target))

        def rename(self, old, new):
            return call("rename", os.replace, self._full(old), self._full(new))

        def utimens(self, path, times=None):
            return call("utimens", os.utime, self._full(path), times)

        def statfs(self, path):
            st = call("statfs", os.statvfs, self._full(path))
            return {key: getattr(st, key) for key in (
                "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                "f_files", "f_flag", "f_frsize", "f_namemax")}

        def open(self, path, flags):
            return call("open", os.open, self._full(path), flags)

        def create(self, path, mode, fi=None):
            return call("create", os.open, self._full(path),
                        os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

        def read(self, path, size, offset, fh):
            return call("read", os.pread, fh, size, offset)

        def write(self, path, data, offset, fh):
            return call("write", os.pwrite, fh, data, offset)

        def truncate(self, path, length, fh=None):
            if fh is not None:
                return call("truncate", os.ftruncate, fh, length)
            return call("truncate", os.truncate, self._full(path), length)

        def flush(self, path, fh):
            faulted("flush")

        def fsync(self, path, datasync, fh):
            return call("fsync", os.fdatasync if datasync else os.fsync, fh)

        def release(self, path, fh):
            return call("release", os.close, fh)

    return FaultFs()


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m trainexec.testing.faultfs",
        description="Mount ROOT at MOUNT_POINT, passing every call through, with the "
                    "faults of the plan in --control (see trainexec.testing.faultfs).")
    parser.add_argument("root")
    parser.add_argument("mount_point")
    parser.add_argument("--control", required=True, help="the plan file")
    parser.add_argument("-o", dest="options", default="",
                        help="FUSE options, e.g. attr_timeout=60,entry_timeout=60")
    args = parser.parse_args(argv)
    from fuse import FUSE

    options = dict(item.split("=", 1) for item in filter(None, args.options.split(",")))
    FUSE(_operations(os.path.abspath(args.root), PlanFile(args.control)),
         args.mount_point, foreground=True, nothreads=False, allow_other=True,
         default_permissions=False, use_ino=True, **options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
