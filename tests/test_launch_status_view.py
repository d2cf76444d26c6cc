"""trainexec/launch/status_view.py: each task's state, the block's lines from the tasks'
status records, and drawing it below the logs (on a StringIO standing in for a terminal).
Through a real pseudo-terminal and a pipe: tests/cluster/test_cli_launch_status.py."""

import io
import types

import pytest

from trainexec.launch.status_view import (StatusView, display_state, render_block,
                                         same_terminal)
from trainexec.launch.task import Task

pytestmark = pytest.mark.any_line


def _task(index=0, pid=None, returncode=None, stopped=False, restarts=0, task_type="worker",
          lines=0):
    task = Task(task_type, index, "{}", None)
    if pid is not None:
        task.run.proc = types.SimpleNamespace(pid=pid)
    task.returncode, task.stopped, task.restarts = returncode, stopped, restarts
    task.lines_this_run = lines
    return task


@pytest.mark.parametrize("task, state", [
    (_task(), "starting"),
    (_task(pid=1), "starting"),
    (_task(pid=1, lines=1), "running"),
    (_task(pid=1, restarts=1), "restarting 1/3"),
    (_task(pid=1, restarts=2, lines=3), "running (restarts 2/3)"),
    (_task(pid=1, returncode=0, lines=1), "exited 0"),
    (_task(pid=1, returncode=170), "exited 170"),
    (_task(pid=1, returncode=-9, lines=1), "killed by SIGKILL"),
    (_task(pid=1, returncode=-15, stopped=True, lines=1), "stopped"),
])
def test_display_state(task, state):
    assert display_state(task, 3) == state


RECORDS = {
    "chief:0": {"kind": "training", "step": 200, "max_steps": 600, "steps_per_sec": 41.25,
                "secs_left": 9.7, "metrics": {"loss": 0.31214, "accuracy": 0.9}},
    "evaluator:0": {"kind": "evaluation", "step": 100, "metrics": {"loss": 0.0886}},
}


def test_the_block_shows_states_progress_and_the_last_evaluation():
    states = [("chief:0", "running"), ("worker:0", "restarting 1/3"),
              ("evaluator:0", "running")]
    assert render_block(states, RECORDS, 65, 200) == [
        "-- trainexec launch: 3 tasks, 1m05s --",
        "chief:0      running         step 200/600  41.2 steps/s  10s left  "
        "accuracy 0.9, loss 0.3121",
        "worker:0     restarting 1/3",
        "evaluator:0  running         evaluated step 100: loss 0.0886"]


def test_a_large_job_type_shares_lines_and_no_line_wraps():
    states = [("chief:0", "running")] + [(f"worker:{i}", "exited 170" if i == 9 else "running")
                                         for i in range(64)]
    block = render_block(states, RECORDS, 3, 60)
    assert [line.split()[:2] for line in block[1:]] == [
        ["chief:0", "running"], ["worker:0-8,10-63", "running"], ["worker:9", "exited"]]
    assert "(63 tasks)" in block[2]
    assert all(len(line) <= 59 for line in block) and block[1].endswith("...")


def test_log_lines_go_above_the_block_and_closing_erases_it():
    screen = io.StringIO()
    tasks = [_task(pid=7, task_type="chief")]
    view = StatusView(screen, lambda: tasks, lambda: None, 0, width=lambda: 80,
                      now=lambda: 0.0)
    view.refresh()
    view("[chief:0] hello")
    view.logging_stream.write("[launch] started\n[launch] half")
    view.close()
    assert screen.getvalue() == (
        "-- trainexec launch: 1 task, 0s --\nchief:0  starting\n"
        "\x1b[2F\x1b[J[chief:0] hello\n-- trainexec launch: 1 task, 0s --\nchief:0  starting\n"
        "\x1b[2F\x1b[J[launch] started\n-- trainexec launch: 1 task, 0s --\nchief:0  starting\n"
        "\x1b[2F\x1b[J")


def test_a_restarted_task_is_running_once_its_new_run_prints_even_past_the_line_cap(
        monkeypatch, tmp_path):
    """A task keeps at most MAX_LINES lines; past that cap the view still sees its next
    run print (it shows `running`, not `restarting 1/3` for ever)."""
    import sys

    from trainexec.launch import processes, task as task_module
    from trainexec.launch.orphan_reaper import OrphanReaper

    monkeypatch.setattr(task_module, "MAX_LINES", 5)
    go = tmp_path / "go"
    task, reaper, written = Task("worker", 0, "{}", None), OrphanReaper(), []
    view = StatusView(io.StringIO(), lambda: [task], lambda: None, 3, width=lambda: 80,
                      now=lambda: 0.0)
    runs = ["for i in range(8): print(i)",  # fills the task's lines past the cap
            f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
            "for i in range(3): print(i)"]
    for run, program in enumerate(runs):
        task.restarts = run
        proc = processes.start(task, [sys.executable, "-c", program], {}, None, reaper,
                               written.append)
        if run:
            assert view.render()[1].split()[1:] == ["restarting", "1/3"]
            go.write_text("")
        assert proc.wait(30) == 0
        task.run.reader.join(30)
        reaper.forget(proc.pid)
        assert view.render()[1].split()[1:] == (["running", "(restarts", "1/3)"] if run
                                                else ["running"])
    assert len(task.output_lines()) == 5 and len(written) == 11


def test_the_view_is_for_stdout_and_stderr_on_one_terminal(tmp_path):
    import os
    import pty

    first, second = pty.openpty(), pty.openpty()
    files = []
    try:
        def tty(fd):
            files.append(open(os.dup(fd), "w"))
            return files[-1]

        log = open(tmp_path / "log", "w")
        files.append(log)
        assert same_terminal(tty(first[1]), tty(first[1]))
        assert not same_terminal(tty(first[1]), log)          # 2>file
        assert not same_terminal(log, tty(first[1]))          # >file
        assert not same_terminal(tty(first[1]), tty(second[1]))  # two terminals
        assert not same_terminal(io.StringIO(), io.StringIO())
    finally:
        for f in files:
            f.close()
        for fd in (*first, *second):
            os.close(fd)


def test_while_it_shows_log_records_and_stderr_go_above_the_block_then_are_given_back(
        monkeypatch):
    import logging
    import sys

    root = logging.getLogger()
    before = logging.StreamHandler(io.StringIO())
    monkeypatch.setattr(root, "handlers", [before])
    stderr, screen = sys.stderr, io.StringIO()
    view = StatusView(screen, lambda: [], lambda: None, 0, width=lambda: 80, now=lambda: 0.0)
    view.start()
    try:
        logging.getLogger("trainexec.launch.cluster").warning("restarting worker:0")
        print("a warning", file=sys.stderr)
    finally:
        view.close()
    assert root.handlers == [before] and sys.stderr is stderr
    logging.getLogger("trainexec.launch.cluster").warning("after")
    shown = screen.getvalue()
    assert "[launch] restarting worker:0\n-- trainexec launch" in shown
    assert "\x1b[J" + "a warning\n-- trainexec launch" in shown
    assert "after" not in shown and before.stream.getvalue() == "after\n"
