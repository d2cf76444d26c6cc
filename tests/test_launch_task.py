"""trainexec/launch/task.py: a planned `TaskSpec`, and a `Task`'s state as its runs come
and go: its pid and whether it runs, how long it ran on its clock, the lines it printed
(counted for the current run only, capped, their tail). No process is started: a run's
process is a stand-in with a pid, as `processes` would set it. (A task made by a
LocalCluster: tests/test_launch_cluster_plan.py; supervised: test_launch_supervisor_table.py.)"""

import dataclasses
import types

import pytest

from launch_fakes import FakeClock
from trainexec.clock import SystemClock
from trainexec.launch import task as task_module
from trainexec.launch.task import TAIL_LINES, Task, TaskSpec

pytestmark = pytest.mark.any_line


def _start(task: Task, pid: int) -> object:
    """What `processes` does when a run starts: the run's process, its output counted anew."""
    proc = types.SimpleNamespace(pid=pid)
    task.run.proc, task.returncode, task.ended_at = proc, None, None
    task.pids.append(pid)
    if task.started_at is None:
        task.started_at = task.clock.now()
    task.begin_run_output()
    return proc


def test_a_spec_is_frozen_and_its_default_environment_cannot_be_changed():
    spec = TaskSpec("evaluator", 0, tf_config=None, address=None)
    assert (spec.name, spec.command, dict(spec.env)) == ("evaluator:0", (), {})
    with pytest.raises(TypeError):
        spec.env["A"] = "1"
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.index = 1


def test_a_task_from_a_spec_starts_fresh_on_the_clock_it_is_given():
    spec = TaskSpec("worker", 0, "{}", "127.0.0.1:2222", command=["prog", "--x"])
    clock = FakeClock()
    task, other = Task.from_spec(spec, clock), Task.from_spec(spec)
    assert task.command == ("prog", "--x") and task.env == {}
    assert task.clock is clock and isinstance(other.clock, SystemClock)
    assert (task.pid, task.running, task.returncode, task.restarts, task.run_secs) == (
        None, False, None, 0, 0.0)
    task.pids.append(7)
    task.add_line("hello", None)
    assert other.pids == [] and other.output_lines() == []  # nothing shared between tasks


def test_pid_and_running_follow_the_current_run():
    task = Task("chief", 0, "{}", "127.0.0.1:1", clock=FakeClock())
    _start(task, 101)
    assert (task.pid, task.running) == (101, True)
    task.returncode = -9
    assert (task.pid, task.running) == (101, False)  # the pid of the run that ended
    _start(task, 102)
    assert (task.pid, task.running, task.pids) == (102, True, [101, 102])


def test_run_secs_counts_on_the_clock_while_running_and_stops_at_the_end():
    clock = FakeClock(100.0)
    task = Task("worker", 1, "{}", "127.0.0.1:2", clock=clock)
    _start(task, 7)
    clock.sleep(4.0)
    assert task.run_secs == 4.0
    task.returncode, task.ended_at = 1, clock.now()
    clock.sleep(10.0)
    assert task.run_secs == 4.0  # ended: the clock moving on changes nothing
    _start(task, 8)  # a restart: counted from the first run's start
    clock.sleep(1.0)
    assert task.run_secs == 15.0


def test_only_the_current_runs_lines_are_counted_but_every_line_is_kept():
    task = Task("worker", 0, "{}", None, clock=FakeClock())
    first = _start(task, 1)
    task.add_line("1: starting", first)
    task.add_line("1: step 10", first)
    assert task.lines_this_run == 2
    second = _start(task, 2)
    assert task.lines_this_run == 0
    task.add_line("1: last words", first)  # the tail of the replaced run, pumped late
    assert task.lines_this_run == 0
    task.add_line("2: starting", second)
    assert task.lines_this_run == 1
    assert task.output_lines() == ["1: starting", "1: step 10", "1: last words",
                                   "2: starting"]


def test_the_tail_is_the_last_lines_and_none_for_zero_or_less():
    task = Task("chief", 0, "{}", None, clock=FakeClock())
    for i in range(TAIL_LINES + 5):
        task.add_line(f"line {i}", None)
    assert task.tail() == [f"line {i}" for i in range(5, TAIL_LINES + 5)]
    assert task.tail(2) == [f"line {TAIL_LINES + 3}", f"line {TAIL_LINES + 4}"]
    assert task.tail(0) == [] and task.tail(-3) == []
    assert len(task.tail(1000)) == TAIL_LINES + 5


def test_past_the_cap_the_oldest_lines_go_but_the_runs_lines_are_still_counted(monkeypatch):
    monkeypatch.setattr(task_module, "MAX_LINES", 3)
    task = Task("worker", 0, "{}", None, clock=FakeClock())
    proc = _start(task, 1)
    for i in range(5):
        task.add_line(f"line {i}", proc)
    assert task.output_lines() == ["line 2", "line 3", "line 4"]
    assert task.lines_this_run == 5
