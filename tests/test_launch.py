"""Tests for trainexec.launch: real processes, real signals, no TensorFlow.

The child program is tests/launch_programs/role.py, which behaves per its
TF_CONFIG task type (see its docstring). Every failure-path test asserts that
no process started by the launcher survives.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from trainexec.cluster import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.launch import JobResult, LocalCluster, TaskOutcome, processes
from trainexec.launch.orphan_reaper import OrphanReaper
from processes import (ROOT, GroupSignals, Launcher, alive, assert_no_survivors, cli,
                       count_ready, printed_pids, role, started_pids, wait_until)

GRACE = 1.0


class Sink:
    """An `output` callable collecting the launcher's prefixed lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)


def ready(cluster: LocalCluster, *names: str) -> bool:
    names = names or tuple(t.name for t in cluster.tasks)
    return all("ready" in cluster.task(n).output_lines() for n in names)


def wait_ready(cluster: LocalCluster, *names: str) -> None:
    """Waits until the tasks (default all) printed "ready": nothing is stopped
    before `wait()` runs, so this makes every test deterministic."""
    wait_until(lambda: ready(cluster, *names), what=f"{names or 'all tasks'} ready")


@pytest.fixture
def make_cluster():
    """Builds quiet LocalClusters and, whatever happens, stops them afterwards."""
    made: list[LocalCluster] = []

    def make(command, **kwargs) -> LocalCluster:
        kwargs.setdefault("grace_secs", GRACE)
        kwargs.setdefault("output", Sink())
        cluster = LocalCluster(command, **kwargs)
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        cluster.stop_all()
        for pid in started_pids(cluster):
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def tf_config_printed(task) -> dict:
    lines = [l for l in task.output_lines() if l.startswith("TF_CONFIG ")]
    assert lines, f"{task.name} printed no TF_CONFIG: {task.output_lines()}"
    return json.loads(lines[0][len("TF_CONFIG "):])


# -- building the cluster (no processes) ---------------------------------------------------
def test_one_cluster_spec_with_a_distinct_task_per_process(make_cluster):
    cluster = make_cluster(role(), workers=2, ps=2, evaluator=True)
    names = [t.name for t in cluster.tasks]
    assert names == ["chief:0", "worker:0", "worker:1", "ps:0", "ps:1", "evaluator:0"]
    configs = [ClusterConfig.from_json(t.tf_config) for t in cluster.tasks]
    assert all(dict(c.cluster) == dict(configs[0].cluster) for c in configs)
    assert set(configs[0].cluster) == {"chief", "worker", "ps"}  # no evaluator job
    assert [(c.task_type, c.task_index) for c in configs] == [
        ("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0), ("ps", 1), ("evaluator", 0)]
    addresses = [t.address for t in cluster.tasks[:-1]]
    assert len(set(addresses)) == 5 and all(a.startswith("127.0.0.1:") for a in addresses)
    assert cluster.tasks[-1].address is None
    assert cluster.primary == ["chief:0", "evaluator:0"]


def test_no_chief_makes_worker0_lead():
    cluster = LocalCluster(role(), workers=2, chief=False)
    assert [t.name for t in cluster.tasks] == ["worker:0", "worker:1"]
    assert "chief" not in json.loads(cluster.tasks[0].tf_config)["cluster"]
    assert cluster.primary == ["worker:0"]


@pytest.mark.parametrize("kwargs, words", [
    ({"workers": -1}, "workers is -1"),
    ({"ps": -2}, "ps is -2"),
    ({"max_restarts": -1}, "max_restarts is -1"),
    ({"grace_secs": -1}, "grace_secs"),
    ({"chief": False, "workers": 0}, "no training task"),
    ({"command": []}, "command is []"),
    ({"command": "python train.py"}, "as a list"),
])
def test_bad_arguments_say_what_is_wrong(kwargs, words):
    kwargs = {"command": role(), **kwargs}
    with pytest.raises(ConfigError, match=re.escape(words)):
        LocalCluster(**kwargs)


def test_wait_for_expands_job_names_to_tasks_in_task_order():
    cluster = LocalCluster(role(), workers=2, ps=1, evaluator=True,
                           wait_for=["evaluator", "worker", "chief:0"])
    assert cluster.primary == ["chief:0", "worker:0", "worker:1", "evaluator:0"]
    cluster = LocalCluster(role(), workers=2, wait_for=("worker:1",))
    assert cluster.primary == ["worker:1"]
    cluster = LocalCluster(role(), ps=2, wait_for=("ps", "chief"))  # a trainexec ps exits
    assert cluster.primary == ["chief:0", "ps:0", "ps:1"]


@pytest.mark.parametrize("wait_for, words", [
    (["worker:3"], "wait_for names 'worker:3', which is not in this cluster: use a task "
                   "(chief:0, worker:0, worker:1, ps:0)"),
    (["evaluator"], "wait_for names 'evaluator', which is not in this cluster"),
    ([], "wait_for is []"),
    ("worker", "wait_for is 'worker': give a list"),
])
def test_bad_wait_for_says_what_is_wrong(wait_for, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        LocalCluster(role(), workers=2, ps=1, wait_for=wait_for)


def test_task_lookup_and_wait_before_start():
    cluster = LocalCluster(role(), ps=1)
    assert cluster.task("ps") is cluster.task("ps:0")
    with pytest.raises(KeyError, match="chief:0, worker:0, ps:0"):
        cluster.task("worker:5")
    with pytest.raises(RuntimeError, match="start"):
        cluster.wait()


def test_summary_table_has_one_row_per_task():
    result = JobResult(ok=False, reason="worker:0 failed with exit code 3\n  more", tasks=(
        TaskOutcome("chief:0", "127.0.0.1:1", None, True, 0, 1.25),
        TaskOutcome("worker:0", "127.0.0.1:2", 3, False, 2, 0.5),
        TaskOutcome("evaluator:0", None, -9, False, 0, 2.0)))
    rows = result.summary().splitlines()
    assert rows[0].split() == ["task", "address", "exit", "restarts", "secs"]
    assert rows[1].split() == ["chief:0", "127.0.0.1:1", "stopped", "0", "1.2"]
    assert rows[2].split() == ["worker:0", "127.0.0.1:2", "3", "2", "0.5"]
    assert rows[3].split() == ["evaluator:0", "-", "SIGKILL", "0", "2.0"]
    assert rows[4].startswith("job FAILED") and rows[4].endswith("exit code 3")
    assert result.exit_status == 1


# -- running it ----------------------------------------------------------------------------
@pytest.mark.cluster
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


@pytest.mark.cluster
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


@pytest.mark.cluster
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


@pytest.mark.cluster
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


@pytest.mark.cluster
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


@pytest.mark.cluster
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


@pytest.mark.cluster
def test_a_task_killed_by_a_signal_fails_the_job(make_cluster):
    with make_cluster(role("chief=serve", "worker=signal:9"), workers=1) as cluster:
        result = cluster.wait(timeout=30)
    assert result.failed_task == "worker:0" and result.exit_code == -9
    assert "killed by SIGKILL" in result.reason
    assert "SIGKILL" in [r.split()[2] for r in result.summary().splitlines()[1:-1]]
    assert_no_survivors(started_pids(cluster))


@pytest.mark.cluster
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


@pytest.mark.cluster
def test_a_crashed_task_is_restarted_with_the_same_tf_config(make_cluster, tmp_path):
    rules = role("worker=crash-once:3", "ps=serve")  # worker:0 leads: no chief
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


@pytest.mark.cluster
def test_a_restart_group_restarts_together_for_one_restart(make_cluster, tmp_path):
    """A hand-written job's `restart_groups` (`--restart-group chief,worker`): the
    worker crashes, the chief still running is stopped and both start again."""
    with make_cluster(role("chief=sleep:3", "worker=crash-once:3"), max_restarts=1,
                      restart_groups=[["chief", "worker"]],
                      env={"MARKER_DIR": str(tmp_path)}) as cluster:
        result = cluster.wait(timeout=30)
        chief, worker = cluster.task("chief"), cluster.task("worker")
        assert result.ok, result.reason
        assert result.restarts == 1
        assert (chief.restarts, len(chief.pids)) == (1, 2)
        assert (worker.restarts, len(worker.pids)) == (1, 2)
        assert chief.output_lines().count("ready") == 2
    assert_no_survivors(started_pids(cluster))


@pytest.mark.cluster
def test_the_job_fails_when_restarts_run_out(make_cluster):
    with make_cluster(role("chief=serve", "worker=exit:4"), max_restarts=2) as cluster:
        result = cluster.wait(timeout=30)
    worker = cluster.task("worker")
    assert result.failed_task == "worker:0" and result.exit_code == 4
    assert worker.restarts == 2 and len(worker.pids) == 3
    assert "after 2 restart(s), none left" in result.reason
    assert_no_survivors(started_pids(cluster))


@pytest.mark.cluster
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


@pytest.mark.cluster
def test_leaving_the_with_block_on_an_error_stops_everything(make_cluster):
    cluster = make_cluster(role("chief=hang", "ps=spawn"), ps=1, grace_secs=0.3)
    with pytest.raises(RuntimeError, match="boom"):
        with cluster:
            wait_ready(cluster, "chief", "worker", "ps")
            raise RuntimeError("boom")
    assert not any(t.running for t in cluster.tasks)
    assert_no_survivors(started_pids(cluster))


@pytest.mark.cluster
def test_interrupt_stops_the_job_like_a_signal(make_cluster):
    with make_cluster(role("chief=serve"), workers=0) as cluster:
        wait_ready(cluster, "chief")
        threading.Timer(0.1, cluster.interrupt, args=(signal.SIGTERM,)).start()
        result = cluster.wait(timeout=30)
        assert cluster.wait() is result
    assert not result.ok and result.signal == signal.SIGTERM and result.exit_status == 143
    assert "interrupted by SIGTERM" in result.reason and result.still_running == ("chief:0",)
    assert_no_survivors(started_pids(cluster))


@pytest.mark.cluster
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


@pytest.mark.cluster
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


@pytest.mark.cluster
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


@pytest.mark.cluster
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


@pytest.mark.cluster
def test_the_watcher_kills_the_groups_not_forgotten_when_the_launcher_ends(caplog):
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    procs = [subprocess.Popen(sleep, start_new_session=True) for _ in range(3)]
    watcher = OrphanReaper()
    try:
        watcher.add(procs[0].pid)
        watcher.add(procs[1].pid)
        watcher.forget(procs[1].pid)  # swept by the launcher: its id may be reused
        first = watcher._proc
        first.kill()  # the watcher dies: the next task started gets a new one
        first.wait()
        watcher.add(procs[2].pid)
        assert watcher._proc is not None and watcher._proc.pid != first.pid
        assert any("watcher process has ended" in r.getMessage() for r in caplog.records)
        watcher.close()  # EOF, as when the launcher dies
        assert procs[0].wait(timeout=5) == -signal.SIGKILL
        assert procs[2].wait(timeout=5) == -signal.SIGKILL
        assert procs[1].poll() is None
    finally:
        watcher.close()
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_command_that_cannot_start_raises():
    with pytest.raises(FileNotFoundError):
        LocalCluster(["/nonexistent/trainexec-program"], workers=2).start()


# -- the command line ----------------------------------------------------------------------
def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(cli(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.cluster
def test_cli_success_prints_header_output_and_summary():
    proc = run_cli("--ps", "1", "--grace", "1", "--", *role("ps=serve", "chief=await-ps"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith('trainexec launch: cluster {"chief": ["127.0.0.1:')
    assert "[ps:0] ready" in lines and "[chief:0] ps reachable" in lines
    assert "[ps:0] got SIGTERM" in lines
    assert lines[-5].split() == ["task", "address", "exit", "restarts", "secs"]
    assert lines[-2].startswith("ps:0") and lines[-2].split()[2] == "stopped"
    assert lines[-1].startswith("job succeeded")


@pytest.mark.cluster
def test_cli_failure_names_the_task_and_exits_1():
    proc = run_cli("--workers", "2", "--ps", "1", "--grace", "1", "--",
                   *role("chief=serve", "ps=spawn", "worker:1=exit:3"))
    assert proc.returncode == 1
    assert "job failed: worker:1 failed with exit code 3" in proc.stderr
    assert "    line 30" in proc.stderr
    assert "job FAILED" in proc.stdout
    assert_no_survivors(printed_pids(proc.stdout))


@pytest.mark.cluster
def test_cli_timeout_exits_1():
    proc = run_cli("--timeout", "1.5", "--grace", "0.2", "--", *role("chief=hang"))
    assert proc.returncode == 1
    assert "timed out after 1.5s; still running: chief:0\n" in proc.stderr
    assert "chief:0 last lines:\n" in proc.stderr and "    ready" in proc.stderr
    assert_no_survivors(printed_pids(proc.stdout))


@pytest.mark.parametrize("args, message", [
    (["--workers", "-1", "--", "x"], "--workers -1 is negative"),
    (["--max-restarts", "-2", "--", "x"], "--max-restarts -2 is negative"),
    (["--no-chief", "--workers", "0", "--", "x"], "--no-chief with --workers 0"),
    (["--timeout", "0", "--", "x"], "--timeout 0 must be positive"),
    (["--grace", "-1", "--", "x"], "--grace -1 is negative"),
    (["--wait-for", "evaluator", "--", "x"], "wait_for names 'evaluator', which is not in"),
    (["--workers", "2", "--"], "no command given"),
    ([], "no command given"),
    (["--workers", "many", "--", "x"], "argument --workers: invalid int value: 'many'"),
    (["--", "/nonexistent/trainexec-program"], "cannot run '/nonexistent/trainexec-program'"),
])
def test_cli_argument_errors_exit_2_naming_the_flag(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


@pytest.mark.cluster
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_cli_signal_stops_every_task(sig, code):
    launcher = Launcher("--workers", "1", "--ps", "1", "--grace", "1", "--",
                        *role("chief=serve", "worker=hang", "ps=spawn"))
    try:
        launcher.wait_for_lines(lambda lines: count_ready(lines) == 3, "three tasks ready")
        pids = launcher.task_pids()
        assert len(pids) >= 4  # three tasks and the ps's grandchild
        launcher.proc.send_signal(sig)
        assert launcher.finish() == code
    finally:
        launcher.close()
    output = "\n".join(launcher.lines)
    assert f"interrupted by {sig.name}" in output
    assert "[ps:0] got SIGTERM" in output  # stopped gracefully
    assert "[worker:0] ignoring SIGTERM" in output  # then SIGKILLed after the grace
    assert_no_survivors(pids)


@pytest.mark.cluster
def test_cli_second_ctrl_c_skips_the_grace_period():
    launcher = Launcher("--grace", "60", "--", *role("chief=hang", "worker=hang"))
    try:
        launcher.wait_for_lines(lambda lines: count_ready(lines) == 2, "two tasks ready")
        pids = launcher.task_pids()
        launcher.proc.send_signal(signal.SIGINT)
        launcher.wait_for_lines(lambda lines: sum("ignoring SIGTERM" in l for l in lines) == 2,
                                "both tasks to ignore SIGTERM")
        start = time.monotonic()
        launcher.proc.send_signal(signal.SIGINT)  # do not wait 60s: SIGKILL now
        assert launcher.finish() == 130
        assert time.monotonic() - start < 20
    finally:
        launcher.close()
    assert_no_survivors(pids)
