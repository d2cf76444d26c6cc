"""trainexec/launch/result.py: the summary table `trainexec launch` prints."""

from trainexec.launch import JobResult, TaskOutcome


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
