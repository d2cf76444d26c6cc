"""The tasks' network: a private network namespace with only loopback (the default), or the host's.

Why: TensorFlow's gRPC servers have no authentication (whoever reaches a
task's port can run graph operations in it), and a server started for
`127.0.0.1:<port>` listens on every interface. In a network namespace of
their own, holding nothing but `lo`, the tasks reach each other on
127.0.0.1 as before and nothing else on this machine or the network reaches
them; their ports cannot collide with anything else on the machine either.
The price: the tasks have no outside network (no remote data, no pip), which
`network="host"` (`--network host`) gives back, servers exposed as before.

How (Linux, all from the standard library and libc through ctypes, as
`processes` already does for prctl):

* A short-lived helper process, started by the launcher, calls unshare(2)
  for a new network namespace, brings `lo` up (ioctl SIOCSIFFLAGS) and
  waits. As root that is all (CLONE_NEWNET: the tasks keep root's
  privileges). Without root it makes a user namespace too, mapping this
  user to root inside it (what `unshare --user --map-root-user --net`
  does): there the tasks run as uid 0, which is this user outside (the files
  they write are this user's; they gain no privilege on the machine).
* The launcher opens `/proc/<helper>/ns/net` (and `ns/user`) and keeps the
  descriptors; the helper then exits. A namespace lives as long as a
  descriptor or a process holds it, so nothing is left to clean up: no name
  under /run/netns (`ip netns list` does not show it), no process to kill.
  Once the launcher has closed its descriptors (`close`, or the launcher's
  death, even by SIGKILL) and the last task has ended, the kernel frees it.
* Each task enters it between fork and exec (setns(2) in the Popen
  `preexec_fn`, before PR_SET_PDEATHSIG): same pid, same command line, same
  session and process group as with the host's network, so prefixed output,
  restarts, restart groups, signals, the orphan reaper and exit codes work
  unchanged. The launcher itself stays in the host's namespace.

Why not the util-linux `unshare` and `nsenter` commands: every task's
command would be wrapped, and a long-lived keeper process would have to be
tied to the launcher's life and reaped. Python 3.12's `os.unshare` and
`os.setns` would do what ctypes does here; trainexec supports 3.11.

Where no namespace can be made (not Linux, user namespaces disabled, a
container's seccomp profile), `PrivateNetwork.make` raises `Unavailable`
naming why, and the launcher falls back to the host's network with a warning.
"""

from __future__ import annotations

import ctypes
import logging
import os
import selectors
import subprocess
import sys
from typing import Callable

from trainexec.records.liveness import read_text_or_none as _read_setting

__all__ = ["HOST", "NETWORKS", "PRIVATE", "PrivateNetwork", "Unavailable", "diagnose",
           "host_warning", "open_network", "PRIVATE_NOTE"]

# The launcher's records keep the one logger name they had before the split.
logger = logging.getLogger("trainexec.launch")

PRIVATE = "private"
HOST = "host"
NETWORKS = (PRIVATE, HOST)

CLONE_NEWNET = 0x40000000  # <linux/sched.h>
CLONE_NEWUSER = 0x10000000

PRIVATE_NOTE = ("network: private (loopback only): the tasks reach each other on 127.0.0.1 "
                "and nothing else reaches their servers; they have no outside network "
                "(--network host / network=\"host\" for jobs that read remote data)")
_EXPOSED = ("each task's TensorFlow server listens on every interface of this machine, "
            "without authentication: whoever reaches its port can run operations in it")


def host_warning(reason: str | None = None) -> str:
    """The warning for tasks on the host's network: asked for (`reason` None) or
    a fallback because no private namespace could be made (`reason` says why)."""
    if reason is None:
        return (f"network: host: {_EXPOSED} (the default, --network private, keeps them "
                "in a namespace of their own)")
    return (f"network: host, as no private network namespace could be made: {reason}. "
            f"So {_EXPOSED}")


class Unavailable(Exception):
    """No private network namespace can be made here; the message says why."""


_MAKE_TIMEOUT_SECS = 10.0

# The helper: unshare(2), the user mapping (without root), lo up, "ready", then wait
# for EOF on stdin (the launcher has opened the namespace, or has died).
_HELPER_SOURCE = """\
import ctypes, fcntl, os, socket, struct, sys
flags, uid, gid = (int(a) for a in sys.argv[1:4])
libc = ctypes.CDLL(None, use_errno=True)
def fail(what):
    print(f"{what}: {os.strerror(ctypes.get_errno())}", flush=True)
    sys.exit(1)
if libc.unshare(flags) != 0:
    fail("unshare(" + ("CLONE_NEWUSER|" if flags & 0x10000000 else "") + "CLONE_NEWNET)")
if flags & 0x10000000:
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"),
                           ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError as err:
        print(f"writing /proc/self/{name}: {err.strerror}", flush=True)
        sys.exit(1)
try:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        got = fcntl.ioctl(s, 0x8913, struct.pack("16sh", b"lo", 0))  # SIOCGIFFLAGS
        up = struct.unpack("16sh", got[:18])[1] | 0x1  # IFF_UP
        fcntl.ioctl(s, 0x8914, struct.pack("16sh", b"lo", up))  # SIOCSIFFLAGS
except OSError as err:
    print(f"bringing lo up: {err.strerror}", flush=True)
    sys.exit(1)
print("ready", flush=True)
sys.stdin.buffer.read()
"""

# Kernel settings that forbid new network namespaces (for anyone), and unprivileged
# user namespaces, and what they mean.
_NETNS_SWITCHES = (
    ("/proc/sys/user/max_net_namespaces", "0",
     "network namespaces are disabled: user.max_net_namespaces = 0"),
)
_USERNS_SWITCHES = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0",
     "user namespaces are disabled for users other than root: "
     "kernel.unprivileged_userns_clone = 0"),
    ("/proc/sys/user/max_user_namespaces", "0",
     "user namespaces are disabled: user.max_user_namespaces = 0"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1",
     "AppArmor restricts unprivileged user namespaces: "
     "kernel.apparmor_restrict_unprivileged_userns = 1"),
)


def diagnose(failure: str, as_root: bool,
             read_setting: Callable[[str], str | None] = _read_setting) -> str:
    """Why the helper failed, in a user's words: its own `failure` line, plus the
    kernel setting responsible when one is (`read_setting` reads /proc/sys)."""
    for path, value, meaning in _NETNS_SWITCHES + (() if as_root else _USERNS_SWITCHES):
        if read_setting(path) == value:
            return f"{meaning}; {failure}"
    return failure


class PrivateNetwork:
    """A private network namespace with only `lo`, held open for a cluster's tasks.

    `make()` creates it (or raises `Unavailable`); `enter()`, called in a child
    between fork and exec, moves that child into it; `close()` lets it go.
    """

    def __init__(self, net_fd: int, user_fd: int | None,
                 setns: Callable[[int, int], int]) -> None:
        self._net_fd = net_fd
        self._user_fd = user_fd
        self._setns = setns

    @property
    def with_user_namespace(self) -> bool:
        """Whether the tasks run in a user namespace too (the launcher is not root)."""
        return self._user_fd is not None

    @classmethod
    def make(cls) -> "PrivateNetwork":
        if not sys.platform.startswith("linux"):
            raise Unavailable(f"network namespaces exist on Linux only, this is {sys.platform}")
        try:
            setns = ctypes.CDLL(None, use_errno=True).setns
        except (OSError, AttributeError):
            raise Unavailable("this C library has no setns(2)") from None
        setns.argtypes = [ctypes.c_int, ctypes.c_int]
        setns.restype = ctypes.c_int
        as_root = os.geteuid() == 0
        flags = CLONE_NEWNET | (0 if as_root else CLONE_NEWUSER)
        try:
            helper = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _HELPER_SOURCE, str(flags),
                 str(os.geteuid()), str(os.getegid())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as err:
            raise Unavailable(f"could not start {sys.executable}: {err}") from None
        fds: list[int] = []
        try:
            line = _first_line(helper)
            if line != "ready":
                raise Unavailable(diagnose(line or f"the helper process exited "
                                           f"{helper.wait()}", as_root))
            kinds = ("net",) if as_root else ("user", "net")
            for kind in kinds:
                fds.append(os.open(f"/proc/{helper.pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC))
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        finally:
            _end(helper)
        return cls(fds[-1], None if as_root else fds[0], setns)

    def enter(self) -> None:
        """Moves the calling process into the namespace: for a Popen `preexec_fn`
        (a child with one thread), before it execs the task. Raises OSError."""
        for fd, kind in ((self._user_fd, CLONE_NEWUSER), (self._net_fd, CLONE_NEWNET)):
            if fd is None:
                continue
            if fd < 0:
                raise OSError("the cluster's private network has been closed")
            if self._setns(fd, kind) != 0:
                raise OSError(ctypes.get_errno(), "setns into the cluster's private network")

    def close(self) -> None:
        """Lets the namespace go: it ends with the last task in it. Idempotent."""
        for fd in (self._user_fd, self._net_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._net_fd = -1
        if self._user_fd is not None:
            self._user_fd = -1


def _first_line(helper: subprocess.Popen) -> str:
    """The helper's first line ("ready" or why not), read with a timeout."""
    stdout = helper.stdout
    assert stdout is not None, "the helper is started with stdout=PIPE"
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        if not selector.select(_MAKE_TIMEOUT_SECS):
            raise Unavailable(f"the helper making it gave no answer in {_MAKE_TIMEOUT_SECS:g} s")
    return stdout.readline().decode("utf-8", "replace").strip()


def _end(helper: subprocess.Popen) -> None:
    """Closes the helper's stdin (it exits) and reaps it; kills it if it lingers."""
    for stream in (helper.stdin, helper.stdout):  # both PIPEs
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    try:
        helper.wait(_MAKE_TIMEOUT_SECS)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()


def open_network(network: str) -> PrivateNetwork | None:
    """The tasks' private network namespace for `network` PRIVATE (None: they get the
    host's, because `network` is HOST or, logged with the reason, none can be made)."""
    if network == HOST:
        logger.warning(host_warning())
        return None
    try:
        private = PrivateNetwork.make()
    except Unavailable as err:
        logger.warning(host_warning(str(err)))
        return None
    logger.info(PRIVATE_NOTE)
    return private
