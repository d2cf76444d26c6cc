"""Hosts on a private Linux bridge: what `trainexec.testing.netns.TestBed` and
`trainexec.testing.slurm.SlurmBed` share.

`wire_hosts` makes the bridge and, per host, a network namespace joined to it by a veth
pair; `BridgeBed` is the base of both beds: made on entry, removed on exit (also when
making fails halfway), and `link_down` / `link_up` to cut a host off and mend it.
"""

from __future__ import annotations

import logging
import subprocess
from typing import Any, Iterable

__all__ = ["BridgeBed", "run_ip", "wire_hosts"]


def run_ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs `ip ARGS...`; a RuntimeError with its message when it fails and `check`."""
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")
    return result


def wire_hosts(bridge: str, hosts: Iterable[Any], prefixlen: int,
               made: list[tuple[str, Any]]) -> None:
    """Makes the bridge `bridge` and, for each host (anything with `netns`, `veth` and
    `address`), its network namespace and a veth pair: `eth0` inside, with the host's
    address (`/prefixlen`) and `lo` up, its peer `veth` on the bridge. Appends
    `("link", name)` and `("netns", name)` to `made` as each is made, so that the caller
    removes them (in reverse) also when a later step fails. `SlurmBed` shares it."""
    run_ip("link", "add", bridge, "type", "bridge")
    made.append(("link", bridge))
    run_ip("link", "set", bridge, "up")
    for host in hosts:
        run_ip("netns", "add", host.netns)
        made.append(("netns", host.netns))
        run_ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0",
               "netns", host.netns)
        made.append(("link", host.veth))
        run_ip("link", "set", host.veth, "master", bridge, "up")
        run_ip("-n", host.netns, "addr", "add", f"{host.address}/{prefixlen}", "dev", "eth0")
        run_ip("-n", host.netns, "link", "set", "eth0", "up")
        run_ip("-n", host.netns, "link", "set", "lo", "up")


class BridgeBed:
    """Hosts on a private bridge, each with a link to it (`host(name).veth`), made on
    entry (`_make()`) and removed on exit (`close()`), also when making them fails
    halfway: `close()` removes whatever was made by then. `TestBed` and
    `trainexec.testing.slurm.SlurmBed` are such."""

    def _make(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def host(self, name: str) -> Any:
        raise NotImplementedError

    def link_down(self, host: str) -> None:
        """Cuts `host` off the bridge: nothing reaches it, it reaches nothing."""
        run_ip("link", "set", self.host(host).veth, "down")
        logging.getLogger(type(self).__module__).info("Link of %s is down", host)

    def link_up(self, host: str) -> None:
        run_ip("link", "set", self.host(host).veth, "up")
        logging.getLogger(type(self).__module__).info("Link of %s is up", host)

    def __enter__(self) -> Any:
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
