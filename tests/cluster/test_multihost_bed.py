"""trainexec/testing/netns.py on the real kernel: hosts that reach each other by service
name over a private bridge, and nothing else; a partition; nothing left behind. Root only."""

import os
import subprocess
import sys

import pytest

from trainexec.testing.netns import PREFIX, TestBed, unavailable

pytestmark = [pytest.mark.cluster, pytest.mark.multihost]

WHY_NOT = unavailable()
needs_root = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")

# A tiny server and client, run on the bed's hosts.
SERVE = ("import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, "
         "socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', 2222)); s.listen(); print('ready', "
         "flush=True); c,_=s.accept(); c.sendall(b'hello'); c.close()")
CONNECT = ("import socket,sys; s=socket.create_connection((sys.argv[1], 2222), timeout=2); "
           "print(s.recv(5).decode())")


def _leftovers():
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    mine = f"{PREFIX}{os.getpid()}"
    return [n for n in names.split() if n.startswith(mine)]


@needs_root
def test_hosts_reach_each_other_by_service_name_and_nothing_else():
    with TestBed(["demo-chief-0", "demo-worker-0"], domain="default.svc") as bed:
        server = bed.popen("demo-chief-0", [sys.executable, "-c", SERVE],
                           stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout.readline().strip() == "ready"
            # The machine's own namespace has no address on the bridge: the bed is a
            # network of its own (and no traffic is sent to its addresses from outside).
            bridge = subprocess.run(["ip", "-o", "addr", "show", bed.bridge],
                                    capture_output=True, text=True).stdout
            assert "inet " not in bridge and "198.18." not in bridge, bridge  # no IPv4
            reached = bed.run("demo-worker-0", [sys.executable, "-c", CONNECT,
                                                "demo-chief-0.default.svc"])
            assert reached.stdout.strip() == "hello", reached.stderr
            # Nothing beyond the bridge: one route, the bed's own /24.
            routes = bed.run("demo-worker-0", ["ip", "route"]).stdout.strip().splitlines()
            assert routes == [f"198.18.0.0/24 dev eth0 proto kernel scope link src "
                              f"{bed.host('demo-worker-0').address}"]
        finally:
            server.kill()
            server.wait()


@needs_root
def test_a_partition_cuts_a_host_off_until_it_is_mended():
    with TestBed(["a", "b"]) as bed:
        server = bed.popen("a", [sys.executable, "-c", SERVE], stdout=subprocess.PIPE,
                           text=True)
        try:
            assert server.stdout.readline().strip() == "ready"
            with bed.partitioned("b"):
                cut = bed.run("b", [sys.executable, "-c", CONNECT, "a"])
                assert cut.returncode != 0 and "hello" not in cut.stdout, cut.stdout
            mended = bed.run("b", [sys.executable, "-c", CONNECT, "a"])
            assert mended.stdout.strip() == "hello", mended.stderr
        finally:
            server.kill()
            server.wait()


@needs_root
def test_everything_is_removed_even_when_the_test_fails():
    with pytest.raises(RuntimeError, match="a failing test"):
        with TestBed(["x", "y"]) as bed:
            assert len(_leftovers()) == 2
            assert os.path.exists(f"/etc/netns/{bed.host('x').netns}/hosts")
            raise RuntimeError("a failing test")
    assert _leftovers() == []
    assert not os.path.exists(f"/etc/netns/{bed.host('x').netns}")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert bed.bridge not in links and bed.host("x").veth not in links
