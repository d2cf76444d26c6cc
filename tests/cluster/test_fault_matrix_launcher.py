"""Fault matrix for the launcher (issue 9): one row per fault.

Each row runs real processes (tests/launch_programs/role.py as every task) into
one fault and asserts what the user sees, that it is dealt with in a bounded
time (a generous bound: it catches hangs, not slowness) and that no process it
started survives.

  launcher-sigkilled    `trainexec launch` is SIGKILLed with five tasks running,
                        one of them with a grandchild: all die, ports free again.
  crash-restart         a task crashes leaving a grandchild and is restarted: the
                        old grandchild is gone before the new run starts.
  reaped-leader-reused  the chief ends long before the job does, and an unrelated
                        process leading its own group is started, given the chief's
                        pid (= its group id) if that pid is free and the test may
                        steer pids (root); that process must survive the job's end,
                        and every group signal the launcher sends must reach a group
                        whose leader is still its unreaped child (so no id it
                        signals can have been reused, whether or not root).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import psutil
import pytest

from trainexec.launch import LocalCluster
from processes import (GroupSignals, Launcher, alive, count_ready, printed_pids, role,
                       started_pids, survivors, wait_until)

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]


@dataclasses.dataclass
class Seen:
    facts: dict[str, Any]  # what the user sees, compared with the row's expectation
    secs: float  # time to detect and clean up the fault
    pids: set[int]  # every process the row started, which must all be gone
    notes: str = ""  # context shown when the row fails


def quiet(line: str) -> None:
    """An `output` sink: the rows read each task's lines from the Task itself."""


def gone_within(pids: set[int], timeout: float) -> float:
    """Seconds until none of `pids` runs (`timeout` if some still do then)."""
    start = time.monotonic()
    with contextlib.suppress(AssertionError):
        wait_until(lambda: not any(alive(p) for p in pids), timeout=timeout)
    return time.monotonic() - start


def ports_free(spec: dict[str, list[str]]) -> bool:
    """Whether every address of the cluster spec can be bound again (a new launch can)."""
    for address in (a for addresses in spec.values() for a in addresses):
        host, port = address.rsplit(":", 1)
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, int(port)))
            except OSError:
                return False
    return True


def launcher_sigkilled(tmp_path, monkeypatch) -> Seen:
    launcher = Launcher("--workers", "2", "--ps", "1", "--evaluator", "--", *role(
        "chief=serve", "worker:0=hang", "worker:1=serve", "ps=spawn", "evaluator=serve"))
    pids: set[int] = set()
    try:
        launcher.wait_for_lines(lambda lines: count_ready(lines) == 5, "five tasks ready")
        announced = printed_pids("\n".join(launcher.lines))  # 5 tasks + the ps's grandchild
        pids = announced | launcher.task_pids()
        header = launcher.lines[0]
        spec, _ = json.JSONDecoder().raw_decode(header, header.index("{"))
        launcher.proc.send_signal(signal.SIGKILL)
        secs = gone_within(pids, timeout=10)
        code = launcher.finish()
    except BaseException:  # leave nothing behind, whatever was collected so far
        with contextlib.suppress(psutil.Error):
            pids |= launcher.task_pids()
        survivors(pids | printed_pids("\n".join(launcher.lines)), timeout=0)
        raise
    finally:
        launcher.close()
    return Seen({"launcher exit": code, "tasks and grandchildren announced": len(announced),
                 "cluster ports free again": ports_free(spec)}, secs, pids)


def crashed_task_restarted(tmp_path, monkeypatch) -> Seen:
    cluster = LocalCluster(role("worker=orphan-once:170", "ps=serve"), chief=False, ps=1,
                           max_restarts=1, grace_secs=1, output=quiet,
                           env={"MARKER_DIR": str(tmp_path)})
    try:
        with cluster:
            result = cluster.wait(timeout=30)
    finally:
        pids = started_pids(cluster)
    worker = cluster.task("worker")
    report = [line for line in worker.output_lines() if line.startswith("first grandchild ")]
    return Seen({"job": "succeeded" if result.ok else result.reason,
                 "worker:0 runs": len(worker.pids), "ps:0 runs": len(cluster.task("ps").pids),
                 "the restarted run found": report}, result.elapsed_secs, pids)


NEWCOMER = r"""
import contextlib, subprocess, sys
pid = int(sys.argv[1]) if sys.argv[1:] else None  # the pid wanted, if free
for _ in range(20):  # other processes on the machine take pids too: try a few times
    steered = False
    if pid is not None:
        with contextlib.suppress(OSError):  # root may choose the next pid
            with open("/proc/sys/kernel/ns_last_pid", "w") as last_pid:
                last_pid.write(str(pid - 1))
            steered = True
    proc = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL,
                            start_new_session=True)
    if proc.pid == pid or not steered:
        break
    proc.kill()
    proc.wait()
print(proc.pid)
"""


def start_unrelated_group_leader(pid: int) -> psutil.Process:
    """A process that is not ours (a short-lived helper starts it) and leads its own
    process group: given `pid` if that pid is free (a zombie still holds its pid) and
    the kernel lets this test steer its next pid (root can); else any pid."""
    args = [sys.executable, "-c", NEWCOMER] + ([] if psutil.pid_exists(pid) else [str(pid)])
    return psutil.Process(int(subprocess.check_output(args, text=True)))


def reaped_leader_reused(tmp_path, monkeypatch) -> Seen:
    group_signals = GroupSignals(monkeypatch)
    cluster = LocalCluster(role("chief=ok", "worker=sleep:1.5"), workers=1, grace_secs=1,
                           wait_for=["chief", "worker"], output=quiet)
    newcomer = None
    try:
        with cluster, concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(cluster.wait, 30)
            chief = cluster.task("chief")
            wait_until(lambda: chief.returncode is not None or waiting.done(),
                       what="the chief to end")
            newcomer = start_unrelated_group_leader(chief.pid)
            result = waiting.result()
        newcomer_fate = "running" if alive(newcomer.pid) else "killed"
    finally:
        pids = started_pids(cluster)
        if newcomer is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                newcomer.kill()  # psutil checks it is still the same process
    chief_pid = cluster.task("chief").pid
    return Seen({
        "job": "succeeded" if result.ok else result.reason,
        "chief exit": cluster.task("chief").returncode,
        "unrelated process": newcomer_fate,
        "chief's group swept": group_signals.reached(chief_pid),
        "groups signalled after their leader was reaped": group_signals.after_reaping(),
    }, result.elapsed_secs, pids, notes=f"the chief was pid {chief_pid}, the unrelated "
       f"process got pid {newcomer.pid}; group signals: {group_signals.calls}")


FAULTS = [
    pytest.param(launcher_sigkilled, {
        "launcher exit": -signal.SIGKILL, "tasks and grandchildren announced": 6,
        "cluster ports free again": True}, 5.0, id="launcher-sigkilled"),
    pytest.param(crashed_task_restarted, {
        "job": "succeeded", "worker:0 runs": 2, "ps:0 runs": 1,
        "the restarted run found": ["first grandchild gone"]}, 15.0, id="crash-restart"),
    pytest.param(reaped_leader_reused, {
        "job": "succeeded", "chief exit": 0, "unrelated process": "running",
        "chief's group swept": True, "groups signalled after their leader was reaped": []},
        15.0, id="reaped-leader-reused"),
]


@pytest.mark.parametrize("fault, expected, max_secs", FAULTS)
def test_fault(fault, expected, max_secs, tmp_path, monkeypatch):
    seen = fault(tmp_path, monkeypatch)
    left = survivors(seen.pids)  # waits up to 5 s, then kills what is left
    assert seen.facts == expected, seen.notes
    assert seen.secs < max_secs, f"took {seen.secs:.1f}s (limit {max_secs}s)"
    assert seen.pids and left == [], f"processes outlived the fault: {left}"
