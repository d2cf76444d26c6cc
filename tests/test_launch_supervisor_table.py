"""trainexec/launch/supervisor.py on a fake clock and fake processes (no process is
started): restarts under each restart policy and `max_restarts`, restart groups,
give-ups (restarts exhausted, a permanent exit) and stop order (which tasks are
stopped, in what order, with what grace), each row asserting the timeline of what the
supervisor asked and the job's result. The same loop on real processes:
tests/cluster/test_launch_supervisor.py."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import time

import pytest

from launch_fakes import RUNS, Exit, FakeClock, FakeProcesses
from trainexec.contract.exit_watchdog import EXITS_DIR
from trainexec.contract.restart_announcements import RestartRule, task_file_name
from trainexec.launch.supervisor import Supervisor
from trainexec.launch.task import Task

pytestmark = pytest.mark.any_line

STEP = 0.5  # the fake clock's step between two looks
FOREVER = math.inf


@dataclasses.dataclass(frozen=True)
class Row:
    script: dict
    timeline: list
    ok: bool
    reason: str  # the start of the result's reason
    failed_task: str | None = None
    restarts: int = 0
    tasks: tuple = ("chief:0", "worker:0")
    primary: tuple = ("chief:0",)
    max_restarts: int = 0
    policies: dict = dataclasses.field(default_factory=dict)
    groups: tuple = ()
    announced: tuple = ()  # RestartRules the tasks announced
    timeout: float | None = None
    interrupt_at: float | None = None
    grace: float = 5.0
    still_running: tuple = ()
    watchdog_records: tuple = ()  # (task, pid, code) its exit deadline's watchdog wrote


ROWS = {
    "success: the chief exits 0, the worker still running is stopped gently": Row(
        script={"chief:0": [Exit(2, 0)]},
        timeline=["0 start chief:0", "0 start worker:0", "2 exit chief:0 0", "2 stop_all",
                  "2 stop worker:0 grace 5", "2 SIGTERM worker:0"],
        ok=True, reason="chief:0 finished successfully"),
    "ExitCode restarts a retryable exit (peer lost, 170) alone, with its TF_CONFIG": Row(
        script={"worker:0": [Exit(1, 170)], "chief:0": [Exit(3, 0)]}, max_restarts=1,
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 170",
                  "1 start worker:0", "3 exit chief:0 0", "3 stop_all",
                  "3 stop worker:0 grace 5", "3 SIGTERM worker:0"],
        ok=True, reason="chief:0 finished successfully", restarts=1),
    "ExitCode restarts a kill by a signal the launcher did not send": Row(
        script={"worker:0": [Exit(1, -9)], "chief:0": [Exit(2, 0)]}, max_restarts=3,
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 -9",
                  "1 start worker:0", "2 exit chief:0 0", "2 stop_all",
                  "2 stop worker:0 grace 5", "2 SIGTERM worker:0"],
        ok=True, reason="chief:0 finished successfully", restarts=1),
    "give up: ExitCode does not restart a permanent exit (1), restarts left or not": Row(
        script={"worker:0": [Exit(1, 1)]}, max_restarts=3,
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 1", "1 stop_all",
                  "1 stop chief:0 grace 5", "1 SIGTERM chief:0"],
        ok=False, reason="worker:0 failed with exit code 1", failed_task="worker:0"),
    "OnFailure restarts a permanent exit too": Row(
        script={"worker:0": [Exit(1, 1)], "chief:0": [Exit(2, 0)]}, max_restarts=1,
        policies={"worker:0": "OnFailure"},
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 1",
                  "1 start worker:0", "2 exit chief:0 0", "2 stop_all",
                  "2 stop worker:0 grace 5", "2 SIGTERM worker:0"],
        ok=True, reason="chief:0 finished successfully", restarts=1),
    "give up: Never restarts nothing, not even a retryable exit": Row(
        script={"worker:0": [Exit(1, 170)]}, max_restarts=3, policies={"worker:0": "Never"},
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 170", "1 stop_all",
                  "1 stop chief:0 grace 5", "1 SIGTERM chief:0"],
        ok=False, reason="worker:0 failed with exit code 170", failed_task="worker:0"),
    "give up: max_restarts used up (each run of the worker fails)": Row(
        script={"worker:0": [Exit(1, 170), Exit(1, 170), Exit(1, 170)]}, max_restarts=2,
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 170",
                  "1 start worker:0", "2 exit worker:0 170", "2 start worker:0",
                  "3 exit worker:0 170", "3 stop_all", "3 stop chief:0 grace 5",
                  "3 SIGTERM chief:0"],
        ok=False, reason="worker:0 failed with exit code 170", failed_task="worker:0",
        restarts=2),
    "give up: no restarts allowed (max_restarts 0)": Row(
        script={"chief:0": [Exit(1.5, 170)]},
        timeline=["0 start chief:0", "0 start worker:0", "1.5 exit chief:0 170",
                  "1.5 stop_all", "1.5 stop worker:0 grace 5", "1.5 SIGTERM worker:0"],
        ok=False, reason="chief:0 failed with exit code 170", failed_task="chief:0"),
    "restart group (option): a crashed worker's chief is SIGKILLed, both start again": Row(
        script={"worker:0": [Exit(1, -9)], "chief:0": [RUNS, Exit(1, 0)]}, max_restarts=1,
        groups=(("chief:0", "worker:0"),),
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 -9",
                  "1 stop chief:0 grace 0", "1 SIGKILL chief:0", "1 start chief:0",
                  "1 start worker:0", "2 exit chief:0 0", "2 stop_all",
                  "2 stop worker:0 grace 5", "2 SIGTERM worker:0"],
        ok=True, reason="chief:0 finished successfully", restarts=1),
    "restart group after a preemption (143): peers get SIGTERM and the grace": Row(
        script={"worker:0": [Exit(1, 143)], "chief:0": [RUNS, Exit(1, 0)]}, max_restarts=1,
        groups=(("chief:0", "worker:0"),),
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 143",
                  "1 stop chief:0 grace 5", "1 SIGTERM chief:0", "1 start chief:0",
                  "1 start worker:0", "2 exit chief:0 0", "2 stop_all",
                  "2 stop worker:0 grace 5", "2 SIGTERM worker:0"],
        ok=True, reason="chief:0 finished successfully", restarts=1),
    "a peer ignoring SIGTERM is SIGKILLed once the grace is over": Row(
        script={"worker:0": [Exit(1, 143)],
                "chief:0": [Exit(FOREVER, 0, ignores_term=True), Exit(1, 0)]},
        max_restarts=1, groups=(("chief:0", "worker:0"),), grace=3.0,
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 143",
                  "1 stop chief:0 grace 3", "1 SIGTERM chief:0", "4 SIGKILL chief:0",
                  "4 start chief:0", "4 start worker:0", "5 exit chief:0 0", "5 stop_all",
                  "5 stop worker:0 grace 3", "5 SIGTERM worker:0"],
        ok=True, reason="chief:0 finished successfully", restarts=1),
    "a group restart is charged once, to the task that failed first": Row(
        tasks=("chief:0", "worker:0", "worker:1"),
        script={"worker:1": [Exit(1, 170), Exit(1, 170)], "worker:0": [Exit(1.5, 170)]},
        max_restarts=1, groups=(("worker:0", "worker:1"),),
        timeline=["0 start chief:0", "0 start worker:0", "0 start worker:1",
                  "1 exit worker:1 170", "1 stop worker:0 grace 0", "1 SIGKILL worker:0",
                  "1 start worker:0", "1 start worker:1", "2 exit worker:1 170",
                  "2 stop_all", "2 stop chief:0,worker:0 grace 5", "2 SIGTERM chief:0",
                  "2 SIGTERM worker:0"],
        ok=False, reason="worker:1 failed with exit code 170", failed_task="worker:1",
        restarts=1),
    "an announced carry_on task with no restarts left is left; the job goes on": Row(
        tasks=("chief:0", "worker:0", "evaluator:0"),
        primary=("chief:0",),
        script={"evaluator:0": [Exit(1, 170)], "chief:0": [Exit(3, 0)]},
        announced=(RestartRule("evaluator:0", ("evaluator:0",), carry_on=True),),
        timeline=["0 start chief:0", "0 start worker:0", "0 start evaluator:0",
                  "1 exit evaluator:0 170", "3 exit chief:0 0", "3 stop_all",
                  "3 stop worker:0 grace 5", "3 SIGTERM worker:0"],
        ok=True, reason="chief:0 finished successfully"),
    "stop order on a timeout: every running task, in task order, with the grace": Row(
        tasks=("chief:0", "worker:0", "worker:1", "ps:0"), script={}, timeout=2.0,
        timeline=["0 start chief:0", "0 start worker:0", "0 start worker:1", "0 start ps:0",
                  "2 stop_all", "2 stop chief:0,worker:0,worker:1,ps:0 grace 5",
                  "2 SIGTERM chief:0", "2 SIGTERM worker:0", "2 SIGTERM worker:1",
                  "2 SIGTERM ps:0"],
        ok=False, reason="timed out after 2s",
        still_running=("chief:0", "worker:0", "worker:1", "ps:0")),
    "stop order on an interrupt: the tasks that still run": Row(
        script={"worker:0": [Exit(1, 0)]}, interrupt_at=1.5,
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 0", "1.5 stop_all",
                  "1.5 stop chief:0 grace 5", "1.5 SIGTERM chief:0"],
        ok=False, reason="interrupted by SIGINT", still_running=("chief:0",)),
    "stop order on success: the stragglers, SIGKILLed after the grace if they must be": Row(
        tasks=("chief:0", "worker:0", "worker:1"),
        script={"chief:0": [Exit(1, 0)], "worker:1": [Exit(FOREVER, 0, ignores_term=True)]},
        grace=2.0,
        timeline=["0 start chief:0", "0 start worker:0", "0 start worker:1",
                  "1 exit chief:0 0", "1 stop_all", "1 stop worker:0,worker:1 grace 2",
                  "1 SIGTERM worker:0", "1 SIGTERM worker:1", "3 SIGKILL worker:1"],
        ok=True, reason="chief:0 finished successfully"),
    "every task ended but not the primaries": Row(
        tasks=("chief:0", "worker:0"), primary=("chief:0", "worker:0"),
        script={"chief:0": [Exit(1, 0)], "worker:0": [Exit(1, 170)]},
        announced=(RestartRule("worker:0", ("worker:0",), carry_on=True),),
        timeline=["0 start chief:0", "0 start worker:0", "1 exit chief:0 0",
                  "1 exit worker:0 170", "1 stop_all"],
        ok=False, reason="every task has ended but not worker:0"),
    "a task its exit deadline's watchdog killed, its role over, counts its own code": Row(
        # TensorFlow's shutdown held worker:0 (its run is pid 102) past its deadline
        script={"worker:0": [Exit(1, -9)], "chief:0": [Exit(2, 0)]},
        watchdog_records=(("worker:0", 102, 0),),
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 -9",
                  "2 exit chief:0 0", "2 stop_all"],
        ok=True, reason="chief:0 finished successfully"),
    "the same through a container's code for SIGKILL (137)": Row(
        script={"worker:0": [Exit(1, 137)], "chief:0": [Exit(2, 0)]},
        watchdog_records=(("worker:0", 102, 0),),
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 137",
                  "2 exit chief:0 0", "2 stop_all"],
        ok=True, reason="chief:0 finished successfully"),
    "a task killed as it was ending preempted counts 143: its group restarts gently": Row(
        script={"worker:0": [Exit(1, -9)], "chief:0": [RUNS, Exit(1, 0)]}, max_restarts=1,
        groups=(("chief:0", "worker:0"),), watchdog_records=(("worker:0", 102, 143),),
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 -9",
                  "1 stop chief:0 grace 5", "1 SIGTERM chief:0", "1 start chief:0",
                  "1 start worker:0", "2 exit chief:0 0", "2 stop_all",
                  "2 stop worker:0 grace 5", "2 SIGTERM worker:0"],
        ok=True, reason="chief:0 finished successfully", restarts=1),
    "a watchdog's record of another run of the task changes nothing": Row(
        script={"worker:0": [Exit(1, -9)], "chief:0": [RUNS]},
        watchdog_records=(("worker:0", 7, 0),),
        timeline=["0 start chief:0", "0 start worker:0", "1 exit worker:0 -9",
                  "1 stop_all", "1 stop chief:0 grace 5", "1 SIGTERM chief:0"],
        ok=False, reason="worker:0 was killed by SIGKILL", failed_task="worker:0"),
}


def _launch_dir(row: Row, path) -> str | None:
    """A launcher's directory holding what the row's tasks announced and their
    watchdogs recorded (None when they said nothing)."""
    if not (row.announced or row.watchdog_records):
        return None
    os.makedirs(path, exist_ok=True)
    for rule in row.announced:
        with open(os.path.join(path, task_file_name(rule.task)), "w") as f:
            f.write(rule.to_json())
    for task, pid, code in row.watchdog_records:
        os.makedirs(os.path.join(path, EXITS_DIR), exist_ok=True)
        with open(os.path.join(path, EXITS_DIR, task_file_name(task)), "w") as f:
            json.dump({"task": task, "pid": pid, "code": code}, f)
    return str(path)


def run_job(row: Row, launch_dir: str | None):
    clock = FakeClock()
    tasks = [Task(*name.split(":")[:1], int(name.split(":")[1]), None, None, clock=clock)
             for name in row.tasks]
    fake = FakeProcesses(clock, tasks, row.script, row.grace)
    supervisor = Supervisor(tasks, fake, primary=row.primary, max_restarts=row.max_restarts,
                            grace_secs=row.grace, flag_groups=row.groups,
                            wait_for_announced=False, launch_dir=launch_dir,
                            started_at=clock.now(), restart_policies=row.policies,
                            clock=clock)
    for task in tasks:
        fake.spawn(task)
    deadline = None if row.timeout is None else clock.now() + row.timeout
    for _ in range(1000):
        interrupted = row.interrupt_at is not None and clock.now() >= row.interrupt_at
        result = supervisor.check(deadline, row.timeout,
                                  signal.SIGINT if interrupted else None)
        if result is not None:
            return result, fake.timeline, tasks
        clock.sleep(STEP)
    raise AssertionError(f"the job never ended: {fake.timeline}")


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_supervisor_table(row, tmp_path):
    result, timeline, tasks = run_job(row, _launch_dir(row, tmp_path))
    assert timeline == row.timeline
    assert result.ok is row.ok, result.reason
    assert result.reason.startswith(row.reason), result.reason
    assert result.failed_task == row.failed_task
    assert result.restarts == row.restarts
    assert result.still_running == row.still_running
    assert not any(task.running for task in tasks)  # every task stopped by the end


def test_the_reasons_of_give_ups_say_why():
    permanent, = [r for k, r in ROWS.items() if k.startswith("give up: ExitCode")]
    used_up, = [r for k, r in ROWS.items() if k.startswith("give up: max_restarts")]
    assert "(not restarted: restart policy ExitCode)" in run_job(permanent, None)[0].reason
    assert "(after 2 restart(s), none left)" in run_job(used_up, None)[0].reason


def test_outcomes_count_each_task_s_restarts_and_run_time():
    row = ROWS["restart group (option): a crashed worker's chief is SIGKILLed, both start again"]
    result, _, tasks = run_job(row, None)
    assert [(t.name, t.restarts, t.stopped) for t in result.tasks] == [
        ("chief:0", 1, False), ("worker:0", 1, True)]
    assert [t.crashes_restarted for t in tasks] == [0, 1]
    assert result.elapsed_secs == 2.0 and result.tasks[0].run_secs == 2.0


def test_the_table_runs_on_its_fake_clock_alone(tmp_path, monkeypatch):
    """No row waits or reads real time: the table's grace periods and timeouts cost
    nothing to run."""
    def real_time(*args):
        raise AssertionError(f"the supervisor used the real clock {args}")

    for name in ("sleep", "monotonic"):  # (time.time stamps log records)
        monkeypatch.setattr(time, name, real_time)
    for i, row in enumerate(ROWS.values()):
        run_job(row, _launch_dir(row, tmp_path / str(i)))
