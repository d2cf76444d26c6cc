"""A real Slurm cluster on one machine: a controller and nodes, each a host of its own.

`SlurmBed` starts munged, slurmctld and one slurmd per node from the Slurm
packages already installed (it installs nothing). Every daemon but munged
runs in a network namespace of its own on a private bridge (198.18.1.0/24,
apart from `trainexec.testing.netns`'s 198.18.0.0/24), with its own
hostname and `/etc/hosts` naming every host: the controller `ctl`
(198.18.1.10) and the nodes, by default `n9`, `n10`, `n11` (198.18.1.11..),
names that sort differently as text and as numbers. munged serves them all
through a socket in the bed's state directory (a Unix socket is reached by
its path from any network namespace).

Namespaces are entered with `nsenter --net` and `unshare --mount --uts`
(not `ip netns exec`, which remounts /sys and so breaks slurmd's cgroup
detection); the nodes use `proctrack/pgid` and `task/none`, so no cgroup is
needed at all: a job step's processes are found by process group.

Client commands (`sbatch`, `srun`, `scontrol`, `squeue`) run on the
controller's host (`bed.run`, `bed.popen`), with `SLURM_CONF` naming the
bed's configuration. `link_down(node)` cuts a node off the bridge.

A requeued job starts again after `cred_expire` seconds (Slurm's default
120); the bed sets 10, so fault tests stay short.

Everything it makes is named `ts<pid>...` (bridge, links, namespaces) or lives
under its state directory; `close()` ends every job, stops every daemon and
every process left in its namespaces (by pid), and removes namespaces,
links and the state directory, also when a test fails. Each slurmctld and
slurmd runs under a small reaper (a child subreaper), so the job step
daemons slurmd leaves orphaned are reaped rather than left as zombies where
pid 1 does not reap.
`unavailable()` says why a bed cannot be made here (not root, a daemon
missing), for a test to skip.

Example:
    ```python
    with SlurmBed() as bed:
        out = bed.run(["srun", "-N3", "-n3", "hostname"])
        job = bed.sbatch("/path/to/job.sbatch")
        state = bed.wait_job(job, timeout=300)     # "COMPLETED"
    ```
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Mapping, Sequence

from trainexec.testing.bridge import BridgeBed, run_ip, wire_hosts

__all__ = ["CONTROLLER", "NODES", "SUBNET", "SlurmBed", "SlurmHost", "unavailable"]

logger = logging.getLogger(__name__)

SUBNET = ipaddress.ip_network("198.18.1.0/24")
PREFIX = "ts"
CONTROLLER = "ctl"
NODES = ("n9", "n10", "n11")
_CONTROLLER_ADDRESS = 10
_FIRST_NODE = 11
_DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "nsenter",
            "unshare")
# Each slurmd and slurmctld runs under this reaper: slurmd's job step daemons
# (slurmstepd) are orphans, and this machine's pid 1 may not reap them; the reaper, a
# child subreaper, does, passes SIGTERM and SIGINT on to the daemon, and exits with its
# code once no child is left.
_REAPER = r"""
import ctypes, os, signal, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
daemon = subprocess.Popen(sys.argv[1:])
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda signum, _f: os.kill(daemon.pid, signum))
code = None
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        break
    except InterruptedError:
        continue
    if pid == daemon.pid:
        code = os.waitstatus_to_exitcode(status)
sys.exit(0 if code is None else (128 - code if code < 0 else code))
"""
_ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
          "BOOT_FAIL", "DEADLINE", "PREEMPTED")


@dataclasses.dataclass(frozen=True)
class SlurmHost:
    """One host of the bed: its name, address, namespace and bridge-side link."""

    name: str
    address: str
    netns: str
    veth: str


def unavailable() -> str | None:
    """Why a `SlurmBed` cannot be made here (None: it can)."""
    if os.geteuid() != 0:
        return "a Slurm bed needs root (network namespaces, slurmd runs jobs as root)"
    missing = [d for d in _DAEMONS if shutil.which(d) is None]
    if missing:
        return (f"{', '.join(missing)} not found: install Slurm and munge "
                "(apt-get install slurmctld slurmd slurm-client munge)")
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is missing: apt-get install iproute2"
    return None


def _kill_and_wait(pids: Sequence[int], timeout: float = 10.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.1)
        if not any(_alive(p) for p in pids):
            return


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


class SlurmBed(BridgeBed):
    """A Slurm controller and nodes in network namespaces (see the module doc)."""

    __test__ = False

    def __init__(self, nodes: Sequence[str] = NODES, cpus_per_node: int = 4,
                 slurmd_timeout: int = 10, kill_wait: int = 20,
                 state_dir: str | None = None) -> None:
        if len(set(nodes)) != len(nodes) or CONTROLLER in nodes:
            raise ValueError(f"node names must be unique and not {CONTROLLER!r}: {nodes}")
        self._id = f"{PREFIX}{os.getpid()}"
        self.bridge = f"{self._id}b"
        names = (CONTROLLER, *nodes)
        self.hosts = {
            name: SlurmHost(name, str(SUBNET[_CONTROLLER_ADDRESS + i]) if i == 0
                            else str(SUBNET[_FIRST_NODE + i - 1]),
                            f"{self._id}h{i}", f"{self._id}v{i}")
            for i, name in enumerate(names)}
        self.nodes = tuple(nodes)
        self.cpus_per_node = cpus_per_node
        self.slurmd_timeout = slurmd_timeout
        self.kill_wait = kill_wait
        self._given_dir = state_dir
        self.dir = ""
        self.conf = ""
        self._made: list[tuple[str, str]] = []
        self._daemons: dict[str, subprocess.Popen] = {}

    # -- making and removing ----------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        """The environment for client commands: SLURM_CONF names the bed's config."""
        return {**os.environ, "SLURM_CONF": self.conf}

    def _make(self) -> None:
        self.dir = self._given_dir or tempfile.mkdtemp(prefix=f"{self._id}-")
        os.chmod(self.dir, 0o755)
        self._made.append(("dir", self.dir))
        self._make_network()
        self._write_config()
        self._start_munge()
        self._start(CONTROLLER, ["slurmctld", "-D", "-i", "-f", self.conf])
        for node in self.nodes:
            self._start(node, ["slurmd", "-D", "-N", node, "-f", self.conf])
        self.wait_idle(60)
        logger.info("Slurm bed %s: %s", self.bridge, ", ".join(
            f"{h.name}={h.address}" for h in self.hosts.values()))

    def _make_network(self) -> None:
        hosts = os.path.join(self.dir, "hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n" + "".join(
                f"{h.address} {h.name}\n" for h in self.hosts.values()))
        os.chmod(hosts, 0o644)
        wire_hosts(self.bridge, self.hosts.values(), SUBNET.prefixlen, self._made)

    def _write_config(self) -> None:
        d = self.dir
        for sub in ("ctl", "munge", *self.nodes):
            os.makedirs(os.path.join(d, sub), mode=0o700, exist_ok=True)
        ctl = self.hosts[CONTROLLER]
        lines = [
            "ClusterName=ts",
            f"SlurmctldHost={ctl.name}({ctl.address})",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            # cred_expire is also how long a requeued job waits to start again.
            f"AuthInfo=socket={d}/munge/munge.sock,cred_expire=10",
            f"StateSaveLocation={d}/ctl",
            f"SlurmdSpoolDir={d}/%n",
            f"SlurmctldPidFile={d}/ctl/slurmctld.pid",
            f"SlurmdPidFile={d}/%n/slurmd.pid",
            f"SlurmctldLogFile={d}/slurmctld.log",
            f"SlurmdLogFile={d}/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # No cgroups: a step's processes are its process group.
            "ProctrackType=proctrack/pgid",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "MpiParams=ports=21000-21999",
            "SwitchType=switch/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            f"SlurmdTimeout={self.slurmd_timeout}",
            "SlurmctldTimeout=30",
            "MessageTimeout=10",
            f"KillWait={self.kill_wait}",
            "InactiveLimit=0",
            "MinJobAge=300",
            "TCPTimeout=5",
            "JobRequeue=0",
        ]
        for node in self.nodes:
            lines.append(f"NodeName={node} NodeAddr={self.hosts[node].address} "
                         f"CPUs={self.cpus_per_node} State=UNKNOWN")
        lines.append(f"PartitionName=ts Nodes={','.join(self.nodes)} Default=YES "
                     "MaxTime=INFINITE State=UP")
        self.conf = os.path.join(d, "slurm.conf")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(self.conf, 0o644)

    def _start_munge(self) -> None:
        m = os.path.join(self.dir, "munge")
        key = os.path.join(m, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self._daemons["munged"] = subprocess.Popen(
            ["munged", "--foreground", "--force", f"--socket={m}/munge.sock",
             f"--key-file={key}", f"--pid-file={m}/munged.pid", f"--log-file={m}/munged.log",
             f"--seed-file={m}/munged.seed"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(m, "munged.out"), "w"),
            start_new_session=True)
        deadline = time.monotonic() + 15
        while not os.path.exists(os.path.join(m, "munge.sock")):
            if self._daemons["munged"].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"munged did not start: see {m}/munged.log")
            time.sleep(0.1)

    def _enter(self, host: str, argv: Sequence[str]) -> list[str]:
        """argv run on `host`: its network namespace, a mount namespace with the bed's
        /etc/hosts, and a UTS namespace with its hostname."""
        h = self.host(host)
        inner = (f"mount --bind {self.dir}/hosts /etc/hosts && hostname {h.name} && "
                 'exec "$@"')
        return ["nsenter", f"--net=/run/netns/{h.netns}", "unshare", "--mount", "--uts",
                "--propagation", "private", "sh", "-c", inner, "sh", *argv]

    def _start(self, host: str, argv: Sequence[str]) -> None:
        with open(os.path.join(self.dir, f"{host}.out"), "w") as log:
            self._daemons[host] = subprocess.Popen(
                self._enter(host, [sys.executable, "-c", _REAPER, *argv]), stdout=log,
                stderr=subprocess.STDOUT, env=self.env, start_new_session=True)

    def close(self) -> None:
        """Ends every job, daemon and process of the bed; removes what it made
        (idempotent)."""
        if CONTROLLER in self._daemons and self._daemons[CONTROLLER].poll() is None:
            try:
                self.run(["scancel", "--user=root"], timeout=30)
                self._wait_no_jobs(30)
            except (subprocess.TimeoutExpired, RuntimeError):
                logger.warning("Slurm bed: jobs not cancelled; killing their processes")
        reapers = {name: self._daemons.pop(name) for name in (*self.nodes, CONTROLLER)
                   if name in self._daemons}
        for proc in reapers.values():  # the reaper passes it on to its daemon
            try:
                proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        own = {proc.pid for proc in reapers.values()}
        for host in self.hosts.values():  # daemons, slurmstepd, tasks left in the namespace
            pids = run_ip("netns", "pids", host.netns, check=False).stdout.split()
            _kill_and_wait([int(p) for p in pids if p.isdigit() and int(p) not in own],
                           timeout=10)
        for proc in reapers.values():  # they exit once all they reap is gone
            _kill_and_wait([proc.pid])
            proc.wait()
        munged = self._daemons.pop("munged", None)
        if munged is not None:
            _kill_and_wait([munged.pid])
            munged.wait()
        for kind, name in reversed(self._made):
            if kind == "netns":
                run_ip("netns", "del", name, check=False)
            elif kind == "link":
                run_ip("link", "del", name, check=False)
            elif kind == "dir" and self._given_dir is None and not os.environ.get(
                    "TRAINEXEC_KEEP_SLURM_BED"):
                shutil.rmtree(name, ignore_errors=True)
        self._made.clear()

    # -- using it -----------------------------------------------------------------------
    def host(self, name: str) -> SlurmHost:
        try:
            return self.hosts[name]
        except KeyError:
            raise KeyError(f"no host {name!r} in this bed: {', '.join(self.hosts)}") from None

    def popen(self, argv: Sequence[str], host: str = CONTROLLER,
              env: Mapping[str, str] | None = None, **kwargs) -> subprocess.Popen:
        """Starts `argv` on `host` (default the controller's), SLURM_CONF set."""
        kwargs.setdefault("start_new_session", True)
        return subprocess.Popen(self._enter(host, argv), env={**self.env, **(env or {})},
                                **kwargs)

    def run(self, argv: Sequence[str], host: str = CONTROLLER,
            env: Mapping[str, str] | None = None, timeout: float = 120.0,
            cwd: str | None = None) -> subprocess.CompletedProcess:
        """Runs `argv` on `host` to its end; its output as text."""
        return subprocess.run(self._enter(host, argv), env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=timeout, cwd=cwd)

    def scontrol(self, *args: str) -> str:
        result = self.run(["scontrol", *args], timeout=30)
        if result.returncode != 0:
            raise RuntimeError(f"scontrol {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def node_states(self) -> dict[str, str]:
        out = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=30).stdout
        return dict(line.split() for line in out.splitlines() if line.strip())

    def wait_idle(self, timeout: float) -> None:
        """Waits until every node is idle (registered, no job)."""
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            for name, proc in self._daemons.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name}'s daemon exited {proc.returncode}: see "
                                       f"{self.dir}/{name}.out and the logs beside it")
            try:
                states = self.node_states()
            except subprocess.TimeoutExpired:
                states = {}
            if len(states) == len(self.nodes) and all(
                    s.rstrip("*") == "idle" for s in states.values()):
                return
            time.sleep(0.5)
        raise RuntimeError(f"Slurm nodes not idle after {timeout:.0f} s: {states}; see "
                           f"{self.dir}")

    def reset(self, timeout: float = 120.0) -> None:
        """Makes a used bed as good as new for the next test: every job cancelled and
        gone, every node's link up, a node Slurm set down or drained resumed, every
        node idle (the daemons keep running: one bed serves a module's tests)."""
        self.run(["scancel", "--user=root"], timeout=30)
        self._wait_no_jobs(timeout)
        for node in self.nodes:
            self.link_up(node)
        for node, state in self.node_states().items():
            if state.rstrip("*~#$@+^-!%") in ("down", "drained", "draining", "fail"):
                self.scontrol("update", f"nodename={node}", "state=resume")
        self.wait_idle(timeout)

    def _wait_no_jobs(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.run(["squeue", "-h"], timeout=30).stdout.strip():
                return
            time.sleep(0.5)
        raise RuntimeError("jobs still queued")

    def sbatch(self, script: str, *args: str) -> int:
        """Submits a batch script; its job id."""
        result = self.run(["sbatch", "--parsable", *args, script], timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"sbatch {script}: {result.stderr.strip()}")
        return int(result.stdout.strip().split(";")[0])

    def job(self, job_id: int) -> dict[str, str]:
        """`scontrol show job` as a dict (JobState, Restarts, ExitCode, ...)."""
        out = self.run(["scontrol", "-o", "show", "job", str(job_id)], timeout=30).stdout
        return dict(re.findall(r"(\S+?)=(\S*)", out))

    def wait_job(self, job_id: int, timeout: float, states: Sequence[str] = _ENDED) -> dict:
        """Waits until the job reaches one of `states` (default: any end); its record."""
        deadline = time.monotonic() + timeout
        record: dict[str, str] = {}
        while time.monotonic() < deadline:
            record = self.job(job_id)
            if record.get("JobState") in states:
                return record
            time.sleep(1.0)
        raise TimeoutError(f"job {job_id} not in {list(states)} after {timeout:.0f} s: "
                           f"{record.get('JobState')}")
