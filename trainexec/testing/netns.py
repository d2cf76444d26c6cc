"""Separate hosts on one machine: a network namespace per host, on a private bridge.

`TestBed` makes a Linux bridge and, per host, a network namespace joined to it
by a veth pair, with its own address in 198.18.0.0/24 (RFC 2544's
benchmarking range: no route leads beyond the bridge, and the machine's own
namespace has no address on it) and its own `/etc/hosts` naming every host
(`demo-worker-1.default.svc`, as Kubernetes' DNS would). A program started on
a host (`popen`) sees only the bridge. `link_down(host)` cuts a host off (its
bridge-side link goes down: a partition); `link_up` mends it.

Everything it makes is named `te<id>...` and removed on exit, also when a test
fails; `remove_leftovers()` removes what a killed run left behind. It needs
root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) and the `ip` command: `unavailable()`
says why not, for a test to skip.

Example::

    with TestBed(["demo-chief-0", "demo-worker-0"], domain="default.svc") as bed:
        proc = bed.popen("demo-chief-0", [sys.executable, "train.py"], env=env)
        bed.link_down("demo-worker-0")      # a partition ...
        bed.link_up("demo-worker-0")        # ... mended
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import logging
import os
import shutil
import subprocess
from typing import Mapping, Sequence

__all__ = ["SUBNET", "Host", "TestBed", "remove_leftovers", "unavailable"]

logger = logging.getLogger(__name__)

SUBNET = ipaddress.ip_network("198.18.0.0/24")
PREFIX = "te"
_NETNS_ETC = "/etc/netns"
_FIRST_HOST = 11  # 198.18.0.11, .12, ...: room below for anything else on the bridge


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
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is missing: apt-get install iproute2"
    probe = f"{PREFIX}probe{os.getpid() % 100000}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")
    return result


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_leftovers() -> list[str]:
    """Removes namespaces, links and hosts files of beds whose process is gone
    (a killed test run); returns what it removed."""
    removed = []
    listed = _ip("netns", "list", check=False).stdout.split()
    links = _ip("-o", "link", "show", check=False).stdout
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
        owner = name[len(PREFIX):].split("h")[0].split("v")[0].split("b")[0]
        if not owner.isdigit() or _pid_alive(int(owner)):
            continue
        if name in listed:
            _ip("netns", "del", name, check=False)
        _ip("link", "del", name, check=False)
        shutil.rmtree(os.path.join(_NETNS_ETC, name), ignore_errors=True)
        removed.append(name)
    return removed


class TestBed:
    """Hosts in network namespaces on a private bridge (see the module doc).

    `hosts` are short names ("demo-worker-1"); each also answers to
    `<name>.<domain>` when `domain` is given.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, hosts: Sequence[str], domain: str | None = None) -> None:
        if len(hosts) > 200:
            raise ValueError(f"{len(hosts)} hosts: a bed holds at most 200")
        if len(set(hosts)) != len(hosts):
            raise ValueError(f"host names must be unique: {list(hosts)}")
        self._id = f"{PREFIX}{os.getpid()}"
        self.bridge = f"{self._id}b"
        self.hosts: dict[str, Host] = {}
        for i, name in enumerate(hosts):
            fqdn = f"{name}.{domain}" if domain else name
            self.hosts[name] = Host(name, fqdn, str(SUBNET[_FIRST_HOST + i]),
                                    f"{self._id}h{i}", f"{self._id}v{i}")
        for host in self.hosts.values():
            if len(host.veth) > 15 or len(self.bridge) > 15:
                raise ValueError(f"interface name {host.veth!r} is too long")
        self._made: list[tuple[str, str]] = []

    # -- making and removing ----------------------------------------------------------
    def __enter__(self) -> "TestBed":
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _make(self) -> None:
        remove_leftovers()
        _ip("link", "add", self.bridge, "type", "bridge")
        self._made.append(("link", self.bridge))
        _ip("link", "set", self.bridge, "up")
        hosts_text = "127.0.0.1 localhost\n" + "".join(
            f"{h.address} {h.fqdn} {h.name}\n" for h in self.hosts.values())
        for host in self.hosts.values():
            _ip("netns", "add", host.netns)
            self._made.append(("netns", host.netns))
            etc = os.path.join(_NETNS_ETC, host.netns)
            os.makedirs(etc, exist_ok=True)
            self._made.append(("etc", etc))
            with open(os.path.join(etc, "hosts"), "w") as f:
                f.write(hosts_text)
            _ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0",
                "netns", host.netns)
            self._made.append(("link", host.veth))
            _ip("link", "set", host.veth, "master", self.bridge, "up")
            _ip("-n", host.netns, "addr", "add", f"{host.address}/{SUBNET.prefixlen}",
                "dev", "eth0")
            _ip("-n", host.netns, "link", "set", "eth0", "up")
            _ip("-n", host.netns, "link", "set", "lo", "up")
        logger.info("Test bed %s: %s", self.bridge, ", ".join(
            f"{h.fqdn}={h.address}" for h in self.hosts.values()))

    def close(self) -> None:
        """Removes every namespace, link and hosts file it made (idempotent)."""
        for kind, name in reversed(self._made):
            if kind == "netns":
                _ip("netns", "del", name, check=False)
            elif kind == "link":
                _ip("link", "del", name, check=False)
            elif kind == "etc":
                shutil.rmtree(name, ignore_errors=True)
        self._made.clear()

    # -- using it -----------------------------------------------------------------------
    def host(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise KeyError(f"no host {name!r} in this bed: {', '.join(self.hosts)}") from None

    def popen(self, host: str, argv: Sequence[str], env: Mapping[str, str] | None = None,
              **kwargs) -> subprocess.Popen:
        """Starts `argv` on `host` (in its namespace; same pid as the program, in a
        session of its own)."""
        kwargs.setdefault("start_new_session", True)
        return subprocess.Popen(["ip", "netns", "exec", self.host(host).netns, *argv],
                                env=None if env is None else dict(env), **kwargs)

    def run(self, host: str, argv: Sequence[str], timeout: float = 30.0
            ) -> subprocess.CompletedProcess:
        """Runs `argv` on `host` to its end; its output as text."""
        return subprocess.run(["ip", "netns", "exec", self.host(host).netns, *argv],
                              capture_output=True, text=True, timeout=timeout)

    def link_down(self, host: str) -> None:
        """Cuts `host` off the bridge: nothing reaches it, it reaches nothing."""
        _ip("link", "set", self.host(host).veth, "down")
        logger.info("Link of %s is down", host)

    def link_up(self, host: str) -> None:
        _ip("link", "set", self.host(host).veth, "up")
        logger.info("Link of %s is up", host)

    @contextlib.contextmanager
    def partitioned(self, host: str):
        """`host` is cut off inside the block."""
        self.link_down(host)
        try:
            yield
        finally:
            self.link_up(host)
