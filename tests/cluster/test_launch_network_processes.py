"""The launcher's private network with real processes (trainexec/launch/network.py): while the
demo job runs, no TensorFlow server of its cluster accepts a connection from another network
namespace on this machine, nor from this machine's own; with `--network host` the same probe
reaches every server, as before, and the launcher warns; where no namespace can be made it
falls back to the host's network, naming why.

The other namespace (`outsider`) is made here, as root: a veth pair in 198.18.0.248/30 (RFC
2544's benchmarking range, like trainexec.testing.netns's beds, whose hosts are .11 to .210),
this machine's end 198.18.0.249, the outsider's .250. Its names start with "tl<pid>" (not
"te": the test bed's leftover sweeper owns those); it is removed in a `finally`, also when a
test fails. The launcher's own namespace is never named, so there is nothing of it to remove.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

from launch_clusters import make_cluster  # noqa: F401  (fixture)
from launch_clusters import Sink
from processes import (ROOT, Launcher, count_ready, printed_pids, role, run_cli, survivors,
                       wait_until)

sys.path.insert(0, str(ROOT / "tests" / "keras_programs"))  # keras_toy

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]

HOST_END = "198.18.0.249"
OUTSIDER = "198.18.0.250"
_PREFIXLEN = 30

PROBE = """\
import json, socket, sys
seen = {}
for port in sys.argv[2:]:
    try:
        socket.create_connection((sys.argv[1], int(port)), timeout=2).close()
        seen[port] = True
    except OSError:
        seen[port] = False
print(json.dumps(seen))
"""
TF_SERVER = """\
import json, os, time
import tensorflow as tf
config = json.loads(os.environ["TF_CONFIG"])
tf.distribute.Server(tf.train.ClusterSpec(config["cluster"]), job_name=config["task"]["type"],
                     task_index=config["task"]["index"], protocol="grpc", start=True)
print("ready", flush=True)
time.sleep(600)
"""
SHOW_INTERFACES = [sys.executable, "-c",
                   "import json, socket; print(json.dumps([n for _, n in socket.if_nameindex()]))"]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


class Outsider:
    """Another network namespace on this machine, reaching it at HOST_END."""

    def __init__(self, netns: str) -> None:
        self.netns = netns

    def connects(self, host: str, ports: list[int]) -> dict[int, bool]:
        """Which of `ports` at `host` accept a TCP connection from the outsider."""
        done = subprocess.run(["ip", "netns", "exec", self.netns, sys.executable, "-c", PROBE,
                               host, *map(str, ports)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        return {int(port): ok for port, ok in json.loads(done.stdout).items()}


@contextlib.contextmanager
def outsider():
    if os.geteuid() != 0:
        pytest.skip("making another network namespace needs root (ip netns); run as root")
    if shutil.which("ip") is None:
        pytest.skip("the `ip` command (iproute2) is missing: apt-get install iproute2")
    name = f"tl{os.getpid()}{uuid.uuid4().hex[:3]}"
    netns, host_end, far_end = f"{name}n", f"{name}a", f"{name}b"
    made: list[tuple[str, str]] = []
    try:
        _ip("netns", "add", netns)
        made.append(("netns", netns))
        _ip("link", "add", host_end, "type", "veth", "peer", "name", far_end, "netns", netns)
        made.append(("link", host_end))
        _ip("addr", "add", f"{HOST_END}/{_PREFIXLEN}", "dev", host_end)
        _ip("link", "set", host_end, "up")
        _ip("-n", netns, "addr", "add", f"{OUTSIDER}/{_PREFIXLEN}", "dev", far_end)
        _ip("-n", netns, "link", "set", far_end, "up")
        _ip("-n", netns, "link", "set", "lo", "up")
        probe = Outsider(netns)
        # The probe can see a server of this machine: a listener on every interface here.
        with socket.create_server(("0.0.0.0", 0)) as listener:
            port = listener.getsockname()[1]
            wait_until(lambda: probe.connects(HOST_END, [port])[port], timeout=10,
                       what="the outsider reaching a server of this machine")
        yield probe
    finally:
        for kind, made_name in reversed(made):
            if kind == "link":  # removes both ends
                _ip("link", "del", made_name, check=False)
            else:
                _ip("netns", "del", made_name, check=False)
        if sys.exc_info()[1] is None:  # else the test's own failure is the one to see
            assert netns not in _ip("netns", "list", check=False).stdout.split()


def listening_ports(pid: int) -> set[int]:
    """The TCP ports listening in `pid`'s network namespace (its /proc/<pid>/net/tcp*)."""
    ports = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/net/{table}") as f:
                for row in f.read().splitlines()[1:]:
                    fields = row.split()
                    if fields[3] == "0A":  # LISTEN
                        ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def accepts_here(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False


# Run 1 only (any_line): what it checks is the launcher's network, whatever the Keras.
def test_during_the_demo_no_task_server_accepts_a_connection_from_outside_its_namespace(
        tmp_path):
    with outsider() as probe:
        result_file = tmp_path / "final_result.json"
        launcher = Launcher(  # ./scripts/demo.sh's job, fewer steps
            "--workers", "2", "--evaluator", "--timeout", "300", "--wait-for", "chief",
            "--wait-for", "worker", "--wait-for", "evaluator", "--", sys.executable, "-m",
            "trainexec.examples.keras_job", "--model-dir", str(tmp_path / "model"),
            "--max-steps", "300", "--save-checkpoints-steps", "100",
            "--result-file", str(result_file))
        accepted: set[str] = set()
        rounds_all_listening = 0
        try:
            launcher.wait_for_lines(lambda ls: any(l.startswith("[launch] started evaluator")
                                                   for l in ls), "every task started")
            header = launcher.lines[0]
            spec, _ = json.JSONDecoder().raw_decode(header, header.index("{"))
            ports = [int(a.rsplit(":", 1)[1]) for addrs in spec.values() for a in addrs]
            pids = [int(p) for p in re.findall(r"^\[launch\] started \S+ \(pid (\d+)\)",
                                               "\n".join(launcher.lines), re.MULTILINE)]
            deadline = time.monotonic() + 300
            while launcher.proc.poll() is None and time.monotonic() < deadline:
                inside = set().union(*(listening_ports(pid) for pid in pids))
                for port, ok in probe.connects(HOST_END, ports).items():
                    if ok:
                        accepted.add(f"{HOST_END}:{port} from another namespace")
                for host in ("127.0.0.1", HOST_END):
                    accepted.update(f"{host}:{port} from this machine's namespace"
                                    for port in ports if accepts_here(host, port))
                if set(ports) <= inside and launcher.proc.poll() is None:
                    rounds_all_listening += 1
                time.sleep(0.5)
            code = launcher.finish(timeout=60)
        finally:
            launcher.close()
    output = "\n".join(launcher.lines)
    assert code == 0, output[-3000:]
    assert not accepted, f"task servers reached from outside: {sorted(accepted)}"
    assert rounds_all_listening >= 1, (
        f"the probe never ran while every server of {ports} listened: {output[-2000:]}")
    assert "[launch] network: private (loopback only)" in output
    assert json.loads(result_file.read_text())["metrics"]["global_step"] == 300


def test_with_network_host_every_server_is_reachable_as_before_and_it_warns(make_cluster,
                                                                            caplog):
    with outsider() as probe:
        sink = Sink()
        cluster = make_cluster([sys.executable, "-c", TF_SERVER], workers=1, output=sink,
                               network="host")
        with caplog.at_level("WARNING", logger="trainexec.launch"):
            cluster.start()
        try:
            wait_until(lambda: all("ready" in t.output_lines() for t in cluster.tasks),
                       timeout=120, what="both TensorFlow servers started")
            ports = [int(t.address.rsplit(":", 1)[1]) for t in cluster.tasks]
            reached = probe.connects(HOST_END, ports)
        finally:
            cluster.stop_all()
    assert cluster.network_used == "host"
    assert reached == {port: True for port in ports}, sink.lines[-20:]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(w.startswith("network: host: each task's TensorFlow server listens on every "
                            "interface of this machine, without authentication")
               for w in warnings), warnings


@pytest.mark.parametrize("network", ["private", "host"])
def test_the_cli_says_which_network_the_tasks_got_and_they_see_it(network):
    proc = run_cli("--workers", "1", "--wait-for", "chief", "--wait-for", "worker",
                   "--network", network, "--", *SHOW_INTERFACES)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    seen = {m.group(1): json.loads(m.group(2))
            for m in re.finditer(r"^\[(\w+:\d)\] (\[.*\])$", proc.stdout, re.MULTILINE)}
    assert set(seen) == {"chief:0", "worker:0"}, proc.stdout
    notes = [l for l in proc.stderr.splitlines() if l.startswith("[launch] network: ")]
    if network == "private" and "no private network namespace could be made" in proc.stderr:
        pytest.skip(f"this machine cannot make a private network namespace: {notes}")
    assert len(notes) == 1, proc.stderr  # said once, before the first task starts
    assert proc.stderr.index(notes[0]) < proc.stderr.index("[launch] started ")
    if network == "private":
        assert seen == {"chief:0": ["lo"], "worker:0": ["lo"]}
        assert notes[0].startswith("[launch] network: private (loopback only): ")
        assert "they have no outside network (--network host" in notes[0]
    else:
        assert all(len(names) > 1 for names in seen.values()), seen  # the host's interfaces
        assert notes[0].startswith("[launch] network: host: each task's TensorFlow server "
                                   "listens on every interface")


def test_without_a_namespace_to_be_had_the_launcher_falls_back_to_the_hosts_naming_why():
    # A user namespace of its own where no network namespace may be made
    # (user.max_net_namespaces = 0 there): the launcher, root inside it, cannot make one.
    if shutil.which("unshare") is None:
        pytest.skip("the `unshare` command (util-linux) is missing")
    jail = ["unshare", "--user", "--map-root-user", "sh", "-c",
            'echo 0 > /proc/sys/user/max_net_namespaces && exec "$@"', "sh"]
    if subprocess.run([*jail, "true"], capture_output=True).returncode != 0:
        pytest.skip("this machine cannot make a user namespace to hold the test")
    proc = subprocess.run([*jail, sys.executable, "-m", "trainexec", "launch", "--workers", "1",
                           "--wait-for", "chief", "--wait-for", "worker", "--",
                           *SHOW_INTERFACES], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert ("[launch] network: host, as no private network namespace could be made: network "
            "namespaces are disabled: user.max_net_namespaces = 0; unshare(CLONE_NEWNET): No "
            "space left on device. So each task's TensorFlow server listens on every "
            "interface") in proc.stderr, proc.stderr
    shown = re.findall(r"^\[\w+:\d\] (\[.*\])$", proc.stdout, re.MULTILINE)
    assert len(shown) == 2 and all(len(json.loads(s)) > 1 for s in shown), proc.stdout


def holders_of(netns_inode: int) -> list[int]:
    """Every process on this machine in the network namespace with that inode."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}/ns/net").st_ino == netns_inode:
                    pids.append(int(entry))
    return pids


def test_when_the_launcher_is_sigkilled_no_task_survives_and_nothing_holds_the_namespace():
    launcher = Launcher("--workers", "1", "--ps", "1", "--", *role(
        "chief=serve", "worker=hang", "ps=spawn"))
    try:
        launcher.wait_for_lines(lambda lines: count_ready(lines) == 3, "three tasks ready")
        pids = printed_pids("\n".join(launcher.lines))  # 3 tasks + the ps's grandchild
        assert len(pids) == 4, launcher.lines
        inodes = {os.stat(f"/proc/{pid}/ns/net").st_ino for pid in pids}
        if "no private network namespace could be made" in "\n".join(launcher.lines):
            pytest.skip("this machine cannot make a private network namespace")
        assert len(inodes) == 1 and os.stat("/proc/self/ns/net").st_ino not in inodes
        launcher.proc.send_signal(signal.SIGKILL)
        launcher.finish()
        assert survivors(pids, timeout=10) == []
        wait_until(lambda: holders_of(*inodes) == [], timeout=10,
                   what="no process left in the tasks' network namespace")
    finally:
        launcher.close()
