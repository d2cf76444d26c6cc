"""trainexec/launch/status_view.py through `trainexec launch` on a real pseudo-terminal:
the live status block (each task's state, the chief's progress and the evaluator's last
metrics from their status records, a task that reports nothing by its process state),
erased before the closing summary; under a pipe or with --no-status, the output is the
logs alone, with no control characters. The tasks are small Python programs that write
status records as the KerasTrainer chief and the evaluator do (no TensorFlow)."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from processes import ROOT, cli

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]

PROGRAM = """
import os, time
from trainexec.contract.task_status import EVALUATION, TRAINING, StatusReporter
name = os.environ["TRAINEXEC_LAUNCHED_TASK"]
reporter = StatusReporter.from_env(name)
for step in (50, 100):
    print(f"{name} at {step}", flush=True)
    if name == "chief:0":
        reporter.report(TRAINING, {"step": step, "max_steps": 100, "steps_per_sec": 25.0,
                                   "secs_left": (100 - step) / 25, "metrics": {"loss": 0.5}})
    if name == "evaluator:0":
        reporter.report(EVALUATION, {"step": step, "metrics": {"loss": 0.25}})
    time.sleep(3)  # each state shown three redraws long (one a second), on a busy machine too
"""
ARGS = ("--evaluator", "--grace", "1", "--", sys.executable, "-c", PROGRAM)
LOGS = [f"[{task}] {task} at {step}" for task in ("chief:0", "worker:0", "evaluator:0")
        for step in (50, 100)]


def _run_on_a_terminal(*args: str, timeout: float = 60, stderr=None) -> tuple[int, str]:
    """`trainexec launch ARGS` with a pseudo-terminal as stdout and stderr (or `stderr`)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(cli(*args), cwd=ROOT, stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave if stderr is None else stderr,
                            env=dict(os.environ, TERM="xterm"))
    os.close(slave)
    output, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the launcher closed the terminal
                break
            if not chunk:
                break
            output += chunk
        code = proc.wait(timeout=10)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, output.decode().replace("\r\n", "\n")


ERASE = re.compile(r"\x1b\[(\d+)F\x1b\[J")


def _blocks(output: str) -> list[list[str]]:
    """Every block drawn: the lines right before each erase sequence."""
    blocks, at = [], 0
    for match in ERASE.finditer(output):
        lines = output[at:match.start()].split("\n")[:-1]
        blocks.append(lines[-int(match.group(1)):])
        at = match.end()
    return blocks


def test_a_terminal_shows_the_status_block_and_the_logs_above_it():
    code, output = _run_on_a_terminal(*ARGS)
    assert code == 0, output
    blocks = _blocks(output)
    assert blocks and all(block[0].startswith("-- trainexec launch: 3 tasks, ")
                          for block in blocks), blocks
    rows = [line for block in blocks for line in block[1:]]
    assert any(re.match(r"chief:0 +running +step 100/100  25\.0 steps/s  done  loss 0\.5$",
                        row) for row in rows), rows
    assert any(re.match(r"chief:0 +running +step 50/100  25\.0 steps/s  2s left", row)
               for row in rows), rows
    assert any(re.match(r"evaluator:0 +running +evaluated step \d+: loss 0\.25$", row)
               for row in rows), rows
    assert any(re.match(r"worker:0 +running$", row) for row in rows), rows  # process only
    logs = ERASE.sub("", output)
    for line in LOGS:
        assert f"{line}\n" in logs
    tail = output[list(ERASE.finditer(output))[-1].end():]  # erased before the summary
    assert "-- trainexec launch" not in tail
    assert [line for line in tail.split("\n") if line.startswith("job ")] == [
        "job succeeded in " + tail.split("job succeeded in ")[1].split("\n")[0]]
    assert tail.rstrip().split("\n")[-1] == \
        "last evaluation (evaluator:0, step 100): loss = 0.25"  # from its status record


def test_under_a_pipe_and_with_no_status_the_output_is_the_logs_alone():
    piped = subprocess.run(cli(*ARGS), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    code, terminal = _run_on_a_terminal("--no-status", *ARGS)
    assert code == 0, terminal
    for output in (piped.stdout + piped.stderr, terminal):
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", output), repr(output)
        assert "-- trainexec launch" not in output
        lines = output.splitlines()
        assert [line for line in lines if line in LOGS] == [
            line for line in lines if re.match(r"\[\w+:\d\] \w+:\d at \d+$", line)]
        assert sorted(line for line in lines if line in LOGS) == sorted(LOGS)
    assert piped.stdout.splitlines()[-2].startswith("job succeeded")


def test_with_stderr_elsewhere_there_is_no_block_and_the_launchers_logs_stay_on_stderr(
        tmp_path):
    """`trainexec launch ... 2>file` on a terminal: the block could not stay below what
    goes to the file, so there is none; the launcher's own `[launch]` lines go to the
    file, as without a terminal."""
    with open(tmp_path / "stderr", "w") as err:
        code, terminal = _run_on_a_terminal(*ARGS, stderr=err)
    assert code == 0, terminal
    logged = (tmp_path / "stderr").read_text()
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", terminal), repr(terminal)
    assert "-- trainexec launch" not in terminal and "[launch]" not in terminal
    assert re.search(r"^\[launch\] started chief:0 ", logged, re.M), logged
    assert sorted(line for line in terminal.splitlines() if line in LOGS) == sorted(LOGS)
    assert re.search(r"^job succeeded", terminal, re.M), terminal
