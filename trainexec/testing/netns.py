"""Separate hosts on one machine: per host a network, UTS, pid and mount namespace.

`TestBed` makes a Linux bridge and, per host, a network namespace joined to it
by a veth pair, with its own address in 198.18.0.0/24 (RFC 2544's
benchmarking range: no route leads beyond the bridge, and the machine's own
namespace has no address on it) and its own `/etc/hosts` naming every host
(`demo-worker-1.default.svc`, as Kubernetes' DNS would, plus any `aliases`).
In that network namespace a *holder* process keeps the rest of the host: its
own hostname (the host's short name), its own pid namespace (the holder is its
pid 1, `/proc` shows that host's processes only) and its own mount namespace
(`/etc/hosts` bound over the machine's; a `shared_dir` view mounted there, see
`trainexec.testing.storage`). A program started on a host (`popen`, `run`)
joins those namespaces (`nsenter`), sees only the bridge, its host's name,
processes and mounts. `link_down(host)` cuts a host off (its bridge-side link
goes down: a partition); `link_up` mends it.

Signals and exit codes mean what they mean for the program: `popen` returns a
small waiter (a session leader, outside the host's pid namespace) whose child
is the program, in the same process group. Signal the group
(`os.killpg(proc.pid, sig)`, as the kubelet does): SIGKILL and SIGSTOP/SIGCONT
reach both; any other signal reaches the program while the waiter ignores it.
The waiter ends as the program did: its exit status, or killed by the same
signal (`returncode` -N). A program's orphans live on in its host until the
bed closes: when a holder ends, its pid namespace ends, and the kernel kills
everything in it (a holder also ends when the process that made the bed dies:
it watches a pipe from it).

Everything it makes is named `te<id>...` and removed on exit, also when a test
fails; `remove_leftovers()` removes what a killed run left behind. It needs
root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) and the `ip`, `unshare` and
`nsenter` commands: `unavailable()` says why not, for a test to skip.

Example:
    ```python
    with TestBed(["demo-chief-0", "demo-worker-0"], domain="default.svc") as bed:
        proc = bed.popen("demo-chief-0", [sys.executable, "train.py"], env=env)
        bed.link_down("demo-worker-0")      # a partition ...
        bed.link_up("demo-worker-0")        # ... mended
    ```
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
from typing import Mapping, Sequence

from trainexec.testing import storage
from trainexec.testing.bridge import BridgeBed, run_ip, wire_hosts
from trainexec.testing.storage import SharedDir

__all__ = ["SUBNET", "Host", "TestBed", "remove_leftovers", "unavailable"]

logger = logging.getLogger(__name__)

SUBNET = ipaddress.ip_network("198.18.0.0/24")
PREFIX = "te"
_NETNS_ETC = "/etc/netns"
_FIRST_HOST = 11  # 198.18.0.11, .12, ...: room below for anything else on the bridge
_TOOLS = {"ip": "iproute2", "unshare": "util-linux", "nsenter": "util-linux"}

# The holder: pid 1 of a host's pid namespace. It names the host, says "ready",
# reaps orphans, and ends when its stdin (a pipe from the bed's process) closes:
# then the kernel kills everything left in the namespace.
_HOLDER = r"""
import os, select, socket, sys
socket.sethostname(sys.argv[1])
sys.stdout.write("ready\n"); sys.stdout.flush()
while True:
    readable, _, _ = select.select([0], [], [], 0.5)
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    if readable and not os.read(0, 64):
        break
"""

# The waiter `popen` returns: it runs outside the host's pid namespace with the
# host's as its children's (nsenter -F), goes to the working directory as the host
# sees it (argv[1]), forks the program there and ends as the program did.
_WAITER = r"""
import os, signal, sys
os.chdir(sys.argv[1])
argv = sys.argv[2:]
sigs = [s for s in signal.valid_signals() if s not in (
    signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD, signal.SIGCONT, signal.SIGTSTP,
    signal.SIGTTIN, signal.SIGTTOU, signal.SIGWINCH, signal.SIGURG)]
signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
for s in sigs:
    try:
        signal.signal(s, lambda *_: None)  # the program gets the group's signals itself
    except (OSError, ValueError):
        pass
pid = os.fork()
if pid == 0:
    for s in sigs:
        try:
            signal.signal(s, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        sys.stderr.write(f"{argv[0]}: {e}\n")
        os._exit(127)
signal.pthread_sigmask(signal.SIG_SETMASK, [])
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    if sig in sigs:
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)
os._exit(os.waitstatus_to_exitcode(status))
"""


@dataclasses.dataclass(frozen=True)
class Host:
    """One host of the bed: its name, its service name, address and namespace."""

    name: str
    fqdn: str
    address: str
    netns: str
    veth: str  # the bridge-side end of its link


def unavailable() -> str | None:
    """Why a `TestBed` cannot be made here (None: it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns); run the tests as root"
    for tool, package in _TOOLS.items():
        if shutil.which(tool) is None:
            return f"the `{tool}` command ({package}) is missing: apt-get install {package}"
    probe = f"{PREFIX}probe{os.getpid() % 100000}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    try:
        held = subprocess.run(["ip", "netns", "exec", probe, "unshare", "--uts", "--pid",
                               "--mount", "--fork", "--mount-proc", "hostname", "probe"],
                              capture_output=True, text=True, timeout=30)
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if held.returncode != 0:
        return f"cannot make UTS, pid and mount namespaces (unshare): {held.stderr.strip()}"
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(name: str) -> str:
    """The pid in a bed's name (te<pid>h3, te<pid>v3, te<pid>b, te<pid>-shared)."""
    rest = name[len(PREFIX):]
    return rest[:len(rest) - len(rest.lstrip("0123456789"))]


def remove_leftovers() -> list[str]:
    """Removes namespaces, links, hosts files and shared-view mount points of beds
    whose process is gone (a killed test run); returns what it removed. (Holders end
    by themselves when that process dies, and their namespaces, FUSE views and
    programs with them.)"""
    removed = []
    listed = run_ip("netns", "list", check=False).stdout.split()
    links = run_ip("-o", "link", "show", check=False).stdout
    names = {n for n in listed if n.startswith(PREFIX)}
    for line in links.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name.startswith(PREFIX):
                names.add(name)
    if os.path.isdir(_NETNS_ETC):
        names.update(n for n in os.listdir(_NETNS_ETC) if n.startswith(PREFIX))
    for name in sorted(names):
        owner = _owner(name)
        if not owner or _pid_alive(int(owner)) or "probe" in name:
            continue
        if name in listed:
            run_ip("netns", "del", name, check=False)
        run_ip("link", "del", name, check=False)
        shutil.rmtree(os.path.join(_NETNS_ETC, name), ignore_errors=True)
        removed.append(name)
    removed += storage.remove_leftovers(lambda pid: _pid_alive(pid))
    return removed


class TestBed(BridgeBed):
    """Hosts, each in its own network, UTS, pid and mount namespaces, on a private
    bridge (see the module doc).

    `hosts` are short names ("demo-worker-1"); each also answers to
    `<name>.<domain>` when `domain` is given, and to the extra names `aliases`
    gives it (every host's `/etc/hosts` lists them beside its own names), e.g.
    ``aliases={"gcs": ("storage.googleapis.com",)}`` for an emulator on host "gcs".
    With `shared_dir` (a `trainexec.testing.storage.SharedDir`) every host mounts
    its own view of one directory at the same path, with NFS-like caching.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, hosts: Sequence[str], domain: str | None = None, *,
                 aliases: Mapping[str, Sequence[str]] = {},
                 shared_dir: SharedDir | None = None) -> None:
        if len(hosts) > 200:
            raise ValueError(f"{len(hosts)} hosts: a bed holds at most 200")
        if len(set(hosts)) != len(hosts):
            raise ValueError(f"host names must be unique: {list(hosts)}")
        unknown = sorted(set(aliases) - set(hosts))
        if unknown:
            raise ValueError(f"aliases name hosts {unknown} that are not in the bed: "
                             f"{list(hosts)}")
        for name, extra in aliases.items():
            if isinstance(extra, str):
                raise ValueError(f"aliases[{name!r}] = {extra!r}: give a sequence of "
                                 f"names, e.g. ({extra!r},)")
        self.aliases = {name: tuple(extra) for name, extra in aliases.items()}
        self.shared_dir = shared_dir
        self._id = f"{PREFIX}{os.getpid()}"
        self.bridge = f"{self._id}b"
        self.hosts: dict[str, Host] = {}
        for i, name in enumerate(hosts):
            if len(name) > 64:
                raise ValueError(f"host name {name!r} is longer than a hostname may be (64)")
            fqdn = f"{name}.{domain}" if domain else name
            self.hosts[name] = Host(name, fqdn, str(SUBNET[_FIRST_HOST + i]),
                                    f"{self._id}h{i}", f"{self._id}v{i}")
        for host in self.hosts.values():
            if len(host.veth) > 15 or len(self.bridge) > 15:
                raise ValueError(f"interface name {host.veth!r} is too long")
        self._made: list[tuple[str, object]] = []
        self._holders: dict[str, tuple[subprocess.Popen, int]] = {}

    # -- making and removing ----------------------------------------------------------
    def _make(self) -> None:
        remove_leftovers()
        wire_hosts(self.bridge, self.hosts.values(), SUBNET.prefixlen, self._made)
        hosts_text = self.hosts_text()
        for host in self.hosts.values():
            etc = os.path.join(_NETNS_ETC, host.netns)
            os.makedirs(etc, exist_ok=True)
            self._made.append(("etc", etc))
            with open(os.path.join(etc, "hosts"), "w") as f:
                f.write(hosts_text)
        if self.shared_dir is not None:
            self._made.append(("release", self.shared_dir))  # after every host ended
            self._made += [("dir", d) for d in self.shared_dir.prepare()]
        for host in self.hosts.values():
            self._hold(host)
            if self.shared_dir is not None:
                self.shared_dir.mount(self, host.name)
        logger.info("Test bed %s: %s", self.bridge, ", ".join(
            f"{h.fqdn}={h.address}" for h in self.hosts.values()))

    def _hold(self, host: Host) -> None:
        """Starts the holder of the host's UTS, pid and mount namespaces."""
        proc = subprocess.Popen(
            ["ip", "netns", "exec", host.netns, "unshare", "--uts", "--pid", "--mount",
             "--fork", "--mount-proc", "--propagation", "private", "--",
             sys.executable, "-I", "-S", "-c", _HOLDER, host.name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        self._made.append(("holder", host.name))
        self._holders[host.name] = (proc, 0)
        stdout = proc.stdout
        assert stdout is not None, "started with stdout=PIPE"
        ready, _, _ = select.select([stdout], [], [], 30)
        line = stdout.readline() if ready else b""
        if line.strip() != b"ready":
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise RuntimeError(f"the holder of host {host.name!r} did not start: "
                               f"{err.decode(errors='replace').strip()}")
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            holder = int(f.read().split()[0])
        self._holders[host.name] = (proc, holder)

    def close(self) -> None:
        """Ends every host (its holder, and with it every program, mount and
        namespace of the host) and removes every namespace, link, hosts file and
        directory it made (idempotent)."""
        for kind, name in reversed(self._made):
            if kind == "holder":
                self._end_holder(str(name))
            elif kind == "netns":
                run_ip("netns", "del", str(name), check=False)
            elif kind == "link":
                run_ip("link", "del", str(name), check=False)
            elif kind == "etc":
                shutil.rmtree(str(name), ignore_errors=True)
            elif kind == "dir":
                with contextlib.suppress(OSError):
                    os.rmdir(str(name))
            elif kind == "release":  # a shared directory's fault layer and tmpfs
                release = getattr(name, "release", None)
                if callable(release):
                    release()
        self._made.clear()

    def _end_holder(self, name: str) -> None:
        proc, holder = self._holders.pop(name, (None, 0))
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:  # a PIPE (`_hold`)
                proc.stdin.close()  # the holder ends, and its pid namespace with it
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            for pid in (holder, proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    if pid:
                        os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):  # PIPEs
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def hosts_text(self) -> str:
        """Every host's `/etc/hosts`: each host's address, names and aliases."""
        lines = ["127.0.0.1 localhost"]
        for h in self.hosts.values():
            names = dict.fromkeys([h.fqdn, h.name, *self.aliases.get(h.name, ())])
            lines.append(f"{h.address} {' '.join(names)}")
        return "\n".join(lines) + "\n"

    # -- using it -----------------------------------------------------------------------
    def host(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise KeyError(f"no host {name!r} in this bed: {', '.join(self.hosts)}") from None

    def holder_pid(self, host: str) -> int:
        """The pid (in this machine's namespace) of the host's pid 1."""
        self.host(host)
        if host not in self._holders or not self._holders[host][1]:
            raise RuntimeError(f"host {host!r} is not running: use the bed inside `with`")
        return self._holders[host][1]

    def on_host(self, host: str, argv: Sequence[str], cwd: str | None = None) -> list[str]:
        """The command line that runs `argv` on `host` through a waiter (see the
        module doc); for `subprocess.Popen` with `start_new_session=True`."""
        return ["nsenter", "-t", str(self.holder_pid(host)), "--net", "--uts", "--mount",
                "--pid", "--no-fork", "--", sys.executable, "-I", "-S", "-c", _WAITER,
                cwd or os.getcwd(), *argv]

    def popen(self, host: str, argv: Sequence[str], env: Mapping[str, str] | None = None,
              **kwargs) -> subprocess.Popen:
        """Starts `argv` on `host` (in its namespaces): a waiter whose process group,
        a session of its own, holds the program; signal it with `os.killpg`."""
        kwargs.setdefault("start_new_session", True)
        cwd = kwargs.pop("cwd", None)
        return subprocess.Popen(self.on_host(host, argv, cwd=cwd and os.fspath(cwd)),
                                env=None if env is None else dict(env), **kwargs)

    def run(self, host: str, argv: Sequence[str], timeout: float = 30.0
            ) -> subprocess.CompletedProcess:
        """Runs `argv` on `host` to its end; its output as text. After `timeout`
        seconds it is killed (TimeoutExpired)."""
        proc = self.popen(host, argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)

    @contextlib.contextmanager
    def partitioned(self, host: str):
        """`host` is cut off inside the block."""
        self.link_down(host)
        try:
            yield
        finally:
            self.link_up(host)
