"""trainexec/launch/supervisor.py: the exit policy carried out on real processes: success,
failure, timeout, interrupt, restarts alone and in a restart group.

The child program is tests/launch_programs/role.py (see its docstring). Every
failure-path test asserts that no process started by the launcher survives.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time

import pytest

from launch_clusters import make_cluster, wait_ready  # noqa: F401
from processes import assert_no_survivors, role, started_pids
from trainexec.contract.exit_watchdog import RECORD_DIR_ENV

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]


def test_success_stops_the_ps_which_shows_as_stopped(make_cluster):
    with make_cluster(role("ps=serve", "chief=await-ps"), workers=1, ps=1) as cluster:
        wait_ready(cluster)
        result = cluster.wait(timeout=30)
        ps = cluster.task("ps")
        assert result.ok, result.reason
        assert result.failed_task is None and result.exit_status == 0
        assert ps.stopped and "got SIGTERM" in ps.output_lines()  # graceful stop
        assert cluster.task("chief").returncode == 0 and not cluster.task("chief").stopped
        assert not ps.running
    row = [r for r in result.summary().splitlines() if r.startswith("ps:0")][0]
    assert row.split()[2] == "stopped"
    assert_no_survivors(started_pids(cluster))

def test_job_waits_for_the_evaluator_and_tolerates_workers_ending_early(make_cluster):
    rules = role("chief=ok", "worker=ok", "evaluator=sleep:1", "ps=serve")
    with make_cluster(rules, workers=2, ps=1, evaluator=True) as cluster:
        wait_ready(cluster, "chief", "worker:0", "worker:1", "ps")
        result = cluster.wait(timeout=30)
    assert result.ok, result.reason
    evaluator, chief = cluster.task("evaluator"), cluster.task("chief")
    assert evaluator.returncode == 0 and not evaluator.stopped
    assert evaluator.ended_at >= chief.ended_at
    assert all(cluster.task(f"worker:{i}").returncode == 0 for i in range(2))
    assert "chief:0 and evaluator:0" in result.reason

def test_wait_for_workers_lets_them_finish_instead_of_stopping_them(make_cluster):
    rules = role("chief=ok", "worker:1=sleep:2", "ps=serve")
    with make_cluster(rules, workers=2, ps=1, wait_for=["chief", "worker"]) as cluster:
        wait_ready(cluster)
        result = cluster.wait(timeout=30)
    assert result.ok, result.reason
    late = cluster.task("worker:1")
    assert late.returncode == 0 and not late.stopped
    assert late.ended_at > cluster.task("chief").ended_at
    assert cluster.task("ps").stopped
    assert "chief:0 and worker:0 and worker:1 finished successfully" in result.reason

    # By default the same late worker is stopped once the chief is done.
    with make_cluster(rules, workers=2, ps=1) as cluster:
        wait_ready(cluster)
        result = cluster.wait(timeout=30)
    assert result.ok, result.reason
    assert cluster.task("worker:1").stopped

def test_a_failing_task_fails_the_job_and_nothing_survives(make_cluster):
    rules = role("chief=serve", "ps=spawn", "worker:1=exit:3")
    with make_cluster(rules, workers=2, ps=1, evaluator=True) as cluster:
        wait_ready(cluster)  # so the ps has started its grandchild
        result = cluster.wait(timeout=30)
        pids = started_pids(cluster)
    assert not result.ok and result.exit_status == 1
    assert result.failed_task == "worker:1" and result.exit_code == 3
    assert "worker:1 failed with exit code 3" in result.reason
    assert result.last_lines == tuple(f"line {i}" for i in range(11, 31))
    assert "    line 30" in result.reason and "line 10" not in result.reason
    assert cluster.task("chief").stopped and cluster.task("ps").stopped
    assert "worker:1" in result.summary() and "FAILED" in result.summary()
    assert any(line.startswith("grandchild pid") for line in cluster.task("ps").output_lines())
    assert_no_survivors(pids)

def test_a_task_killed_by_a_signal_fails_the_job(make_cluster):
    with make_cluster(role("chief=serve", "worker=signal:9"), workers=1) as cluster:
        result = cluster.wait(timeout=30)
    assert result.failed_task == "worker:0" and result.exit_code == -9
    assert "killed by SIGKILL" in result.reason
    assert "SIGKILL" in [r.split()[2] for r in result.summary().splitlines()[1:-1]]
    assert_no_survivors(started_pids(cluster))

def test_timeout_stops_everything_and_names_what_was_running(make_cluster):
    rules = role("chief=hang", "ps=serve")
    with make_cluster(rules, workers=1, ps=1, grace_secs=0.5) as cluster:
        wait_ready(cluster)
        start = time.monotonic()
        result = cluster.wait(timeout=1.0)
        took = time.monotonic() - start
    assert not result.ok and result.failed_task is None
    assert result.still_running == ("chief:0", "ps:0")
    assert "timed out after 1s" in result.reason and "chief:0, ps:0" in result.reason
    chief = cluster.task("chief")
    assert chief.returncode == -signal.SIGKILL  # ignored SIGTERM, so SIGKILLed after grace
    assert "ignoring SIGTERM" in chief.output_lines()
    assert took < 1.0 + 0.5 + 5
    assert_no_survivors(started_pids(cluster))

def test_a_crashed_task_is_restarted_with_the_same_tf_config(make_cluster, tmp_path):
    # 170: the exit-code contract's "peer lost", retryable
    rules = role("worker=crash-once:170", "ps=serve")  # worker:0 leads: no chief
    with make_cluster(rules, chief=False, ps=1, max_restarts=1,
                      env={"MARKER_DIR": str(tmp_path)}) as cluster:
        result = cluster.wait(timeout=30)
    worker = cluster.task("worker")
    assert result.ok, result.reason
    assert len(cluster.task("ps").pids) == 1  # the others are left alone
    assert worker.restarts == 1 and worker.returncode == 0 and len(worker.pids) == 2
    lines = worker.output_lines()
    configs = [l for l in lines if l.startswith("TF_CONFIG ")]
    assert len(configs) == 2 and configs[0] == configs[1]
    assert json.loads(configs[0][len("TF_CONFIG "):]) == json.loads(worker.tf_config)
    assert lines.count(f"bound {worker.address}") == 2  # same port, free again
    assert lines.index("crashing on purpose") < lines.index("recovered")
    row = [r for r in result.summary().splitlines() if r.startswith("worker:0")][0]
    assert row.split()[2:4] == ["0", "1"]

def test_a_restart_group_restarts_together_for_one_restart(make_cluster, tmp_path):
    """A hand-written job's `restart_groups` (`--restart-group chief,worker`): the
    worker crashes, the chief still running is stopped and both start again."""
    with make_cluster(role("chief=sleep:3", "worker=crash-once:170"), max_restarts=1,
                      restart_groups=[["chief", "worker"]],
                      env={"MARKER_DIR": str(tmp_path), "CRASH_AFTER": "chief:0"}) as cluster:
        result = cluster.wait(timeout=30)
        chief, worker = cluster.task("chief"), cluster.task("worker")
        assert result.ok, result.reason
        assert result.restarts == 1
        assert (chief.restarts, len(chief.pids)) == (1, 2)
        assert (worker.restarts, len(worker.pids)) == (1, 2)
        assert chief.output_lines().count("ready") == 2
    assert_no_survivors(started_pids(cluster))

def test_the_job_fails_when_restarts_run_out(make_cluster):
    with make_cluster(role("chief=serve", "worker=exit:170"), max_restarts=2) as cluster:
        result = cluster.wait(timeout=30)
    worker = cluster.task("worker")
    assert result.failed_task == "worker:0" and result.exit_code == 170
    assert worker.restarts == 2 and len(worker.pids) == 3
    assert "after 2 restart(s), none left" in result.reason
    assert "a peer task was lost, frozen or cut off (retryable)" in result.reason
    assert_no_survivors(started_pids(cluster))

def test_a_permanent_exit_is_not_restarted_unless_the_policy_says_so(make_cluster,
                                                                     tmp_path):
    # Exit 3 (1-127) is permanent under the default ExitCode policy, as under TFJob's:
    # the job fails at once, restarts left or not.
    with make_cluster(role("chief=serve", "worker=exit:3"), max_restarts=2) as cluster:
        result = cluster.wait(timeout=30)
    assert result.failed_task == "worker:0" and result.exit_code == 3
    assert cluster.task("worker").restarts == 0
    assert "not restarted: restart policy ExitCode" in result.reason
    assert "(permanent)" in result.reason
    assert_no_survivors(started_pids(cluster))
    # OnFailure restarts it like any failure.
    with make_cluster(role("chief=sleep:3", "worker=crash-once:3"), max_restarts=1,
                      restart_policy="OnFailure",
                      env={"MARKER_DIR": str(tmp_path)}) as cluster:
        result = cluster.wait(timeout=30)
    assert result.ok, result.reason
    assert cluster.task("worker").restarts == 1
    assert_no_survivors(started_pids(cluster))

def test_interrupt_stops_the_job_like_a_signal(make_cluster):
    with make_cluster(role("chief=serve"), workers=0) as cluster:
        wait_ready(cluster, "chief")
        threading.Timer(0.1, cluster.interrupt, args=(signal.SIGTERM,)).start()
        result = cluster.wait(timeout=30)
        assert cluster.wait() is result
    assert not result.ok and result.signal == signal.SIGTERM and result.exit_status == 143
    assert "interrupted by SIGTERM" in result.reason and result.still_running == ("chief:0",)
    assert_no_survivors(started_pids(cluster))


HELD_AT_EXIT = """
import atexit, json, os, sys, time
from trainexec.contract.exit_deadline import end_within_at_exit
task = json.loads(os.environ["TF_CONFIG"])["task"]
if task["type"] == "chief":
    time.sleep(8)  # still training when the worker is killed
    sys.exit(0)
end_within_at_exit(1.0, 0, "worker:0")
# As TensorFlow's C++ shutdown can: one long call into C that holds the interpreter's
# lock, so the deadline's own thread never runs and its watchdog kills the task (137).
atexit.register(lambda: sum(range(10 ** 14)))
print("role over", flush=True)
"""


def test_a_task_its_watchdog_killed_once_its_role_was_over_does_not_fail_the_job(
        make_cluster, monkeypatch, tmp_path):
    # No restarts allowed (the default): the worker's 137 alone would fail the job.
    # A record directory the launcher inherited (`slurm-exec -- trainexec launch ...`)
    # does not divert its tasks' records from its own directory.
    monkeypatch.setenv(RECORD_DIR_ENV, str(tmp_path / "elsewhere"))
    with make_cluster([sys.executable, "-c", HELD_AT_EXIT], workers=1,
                      wait_for=["chief", "worker"]) as cluster:
        result = cluster.wait(timeout=60)
    worker = cluster.task("worker:0")
    assert result.ok, result.reason
    assert worker.returncode == 0 and not worker.stopped and worker.restarts == 0
    assert any("its exit deadline unable to run" in line for line in worker.output_lines())
    assert_no_survivors(started_pids(cluster))
    assert not (tmp_path / "elsewhere").exists()
