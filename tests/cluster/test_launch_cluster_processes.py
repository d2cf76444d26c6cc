"""trainexec/launch/cluster.py running real processes: each task gets its TF_CONFIG and a
free port, its output prefixed with its name; one task stopped, killed or restarted; an
error in the `with` block or the atexit safety net stopping everything. No TensorFlow.
Building the cluster (no processes) is tests/test_launch_cluster.py.

The child program is tests/launch_programs/role.py, which behaves per its
TF_CONFIG task type (see its docstring). Every failure-path test asserts that
no process started by the launcher survives. What the job does when tasks end
is tests/cluster/test_launch_supervisor.py.
"""

from __future__ import annotations

import io
import json
import re
import signal
import time

import pytest

from launch_clusters import Sink, make_cluster, tf_config_printed, wait_ready  # noqa: F401
from processes import alive, assert_no_survivors, role, started_pids, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]


def test_each_process_gets_its_tf_config_and_a_free_port(make_cluster):
    cluster = make_cluster(role(), workers=2, ps=1, evaluator=True, env={"ROLE_TAG": "t1"})
    with cluster:
        wait_ready(cluster)
        result = cluster.wait(timeout=30)
    assert result.ok, result.reason
    for task in cluster.tasks:
        assert tf_config_printed(task) == json.loads(task.tf_config)
        assert "env t1 1" in task.output_lines()  # env added, output unbuffered
        if task.address:  # the child could bind its port: it was free
            assert f"bound {task.address}" in task.output_lines()
    evaluator = tf_config_printed(cluster.task("evaluator"))
    assert evaluator["task"] == {"type": "evaluator", "index": 0}
    assert evaluator["cluster"] == cluster.cluster_spec
    assert not any(l.startswith("bound") for l in cluster.task("evaluator").output_lines())


def test_output_lines_are_prefixed_with_the_task_name(make_cluster):
    sink = Sink()
    with make_cluster(role(), workers=2, output=sink) as cluster:
        wait_ready(cluster)
        assert cluster.wait(timeout=30).ok
    for line in sink.lines:
        assert re.match(r"^\[(chief:0|worker:0|worker:1)\] \S", line), line
    for task in cluster.tasks:
        mine = [l[len(task.name) + 3:] for l in sink.lines if l.startswith(f"[{task.name}] ")]
        assert mine == task.output_lines() and "ready" in mine
        assert task.tail(2) == mine[-2:]

    stream = io.StringIO()
    with make_cluster(role(), workers=0, output=stream) as cluster:
        assert cluster.wait(timeout=30).ok
    assert stream.getvalue().splitlines()[-1] == "[chief:0] ready"


def test_stop_kill_and_restart_one_task(make_cluster):
    rules = role("chief=hang", "worker=hang", "ps=serve")
    with make_cluster(rules, workers=1, ps=1, grace_secs=0.5) as cluster:
        wait_ready(cluster, "chief", "worker", "ps")
        ps = cluster.stop("ps")
        assert ps.stopped and ps.returncode == 0 and "got SIGTERM" in ps.output_lines()
        first_pid = ps.pid
        cluster.restart("ps")
        assert ps.running and ps.pid != first_pid and ps.restarts == 1
        wait_until(lambda: ps.output_lines().count("ready") == 2, what="ps ready again")
        assert ps.output_lines().count(f"bound {ps.address}") == 2

        start = time.monotonic()
        worker = cluster.stop("worker")  # ignores SIGTERM: SIGKILL after the grace
        assert worker.returncode == -signal.SIGKILL
        assert 0.4 < time.monotonic() - start < 5
        assert "ignoring SIGTERM" in worker.output_lines()
        chief = cluster.kill("chief")  # straight to SIGKILL, no SIGTERM first
        assert chief.returncode == -signal.SIGKILL and chief.stopped
        assert "ignoring SIGTERM" not in chief.output_lines()
        pids = started_pids(cluster)
    assert_no_survivors(pids)


def test_leaving_the_with_block_on_an_error_stops_everything(make_cluster):
    cluster = make_cluster(role("chief=hang", "ps=spawn"), ps=1, grace_secs=0.3)
    with pytest.raises(RuntimeError, match="boom"):
        with cluster:
            wait_ready(cluster, "chief", "worker", "ps")
            raise RuntimeError("boom")
    assert not any(t.running for t in cluster.tasks)
    assert_no_survivors(started_pids(cluster))


def test_the_atexit_safety_net_kills_what_an_ended_task_left_behind(make_cluster):
    cluster = make_cluster(role("chief=serve", "worker=orphan:0"))
    with cluster:
        wait_ready(cluster)
        worker = cluster.task("worker")
        wait_until(lambda: not alive(worker.pid), what="worker:0 to exit")
        grandchild = int(worker.output_lines()[-2].split()[-1])  # "grandchild pid N"
        assert alive(grandchild)
        cluster._kill_everything()  # what atexit runs if the program exits without stopping
        assert_no_survivors(started_pids(cluster))
