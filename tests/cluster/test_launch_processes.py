"""trainexec/launch/processes.py: tasks started from one forking thread, the parent-death
signal missing (as on macOS), exits seen without os.waitid; through LocalCluster,
with real processes.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from trainexec.launch import processes
from launch_clusters import make_cluster, wait_ready  # noqa: F401
from processes import (GroupSignals, alive, assert_no_survivors, role, started_pids,
                       wait_until)

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]


def test_tasks_outlive_the_short_lived_thread_that_started_them(make_cluster):
    # The parent-death signal fires when the *thread* that forked a task ends.
    cluster = make_cluster(role("chief=serve", "worker=serve"))
    starter = threading.Thread(target=cluster.start)
    starter.start()
    starter.join()
    wait_ready(cluster)
    time.sleep(0.3)  # the starter thread is long gone
    assert all(task.running and alive(task.pid) for task in cluster.tasks)
    threading.Thread(target=cluster.restart, args=("worker",)).start()
    wait_until(lambda: cluster.task("worker").output_lines().count("ready") == 2,
               what="the restarted worker ready")
    time.sleep(0.3)
    worker = cluster.task("worker")
    assert worker.running and alive(worker.pid)
    cluster.stop_all()
    assert [t.output_lines().count("got SIGTERM") for t in cluster.tasks] == [1, 2]
    assert_no_survivors(started_pids(cluster))

def test_without_the_parent_death_signal_it_warns_and_still_runs(make_cluster, monkeypatch,
                                                                   caplog):
    monkeypatch.setattr(processes, "load_prctl", lambda: None)  # as on macOS
    with make_cluster(role("ps=serve", "chief=await-ps"), workers=0, ps=1) as cluster:
        result = cluster.wait(timeout=30)
    assert result.ok, result.reason
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("PR_SET_PDEATHSIG) is not available" in w and "watcher" in w
               for w in warnings), warnings
    assert_no_survivors(started_pids(cluster))

def test_without_waitid_an_ended_tasks_group_is_left_alone(make_cluster, monkeypatch):
    # As on macOS before Python 3.13: an exit is only seen by reaping the task, so
    # its group id may be reused at once and must never be signalled after that.
    group_signals = GroupSignals(monkeypatch)
    monkeypatch.delattr(os, "waitid")
    with make_cluster(role("chief=ok", "worker=sleep:0.5", "ps=serve"), ps=1,
                      wait_for=["chief", "worker"]) as cluster:
        result = cluster.wait(timeout=30)
    assert result.ok, result.reason
    assert [t.returncode for t in cluster.tasks] == [0, 0, 0]  # the ps exits 0 on SIGTERM
    assert group_signals.reached(cluster.task("ps").pid)  # the running ps was stopped
    assert group_signals.after_reaping() == []
    assert_no_survivors(started_pids(cluster))
