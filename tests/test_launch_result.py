"""trainexec/launch/result.py: the summary table `trainexec launch` prints."""

import pytest

from trainexec.launch import JobResult, TaskOutcome
from trainexec.launch.result import name_tasks

pytestmark = pytest.mark.any_line


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


def test_a_large_job_type_shares_rows_and_names_failed_tasks_one_by_one():
    workers = tuple(TaskOutcome(f"worker:{i}", f"127.0.0.1:{100 + i}",
                                137 if i == 7 else 0, False, 1 if i == 7 else 0, 10.0 + i / 10)
                    for i in range(64))
    result = JobResult(ok=False, reason="worker:7 was killed", tasks=(
        TaskOutcome("chief:0", "127.0.0.1:1", 0, False, 0, 12.0), *workers))
    rows = [row.split() for row in result.summary().splitlines()]
    assert rows[1] == ["chief:0", "127.0.0.1:1", "0", "0", "12.0"]
    assert rows[2] == ["worker:0-6,8-63", "(63", "tasks)", "-", "0", "0", "10.0-16.3"]
    assert rows[3] == ["worker:7", "127.0.0.1:107", "137", "1", "10.7"]
    assert len(rows) == 5  # header, 3 rows, the outcome


def test_a_small_job_keeps_one_row_per_task():
    tasks = tuple(TaskOutcome(f"worker:{i}", None, 0, False, 0, 1.0) for i in range(8))
    assert len(JobResult(ok=True, reason="ok", tasks=tasks).summary().splitlines()) == 10


def test_task_names_in_a_sentence():
    assert name_tasks(["chief:0", "worker:0", "worker:1"]) == "chief:0 and worker:0 and worker:1"
    names = ["chief:0", *[f"worker:{i}" for i in range(64)], "evaluator:0"]
    assert name_tasks(names) == "chief:0, worker:0-63 and evaluator:0"
    assert name_tasks([f"worker:{i}" for i in range(64) if i != 5]) == "worker:0-4,6-63"


def test_the_summary_ends_with_the_metrics_the_exports_and_the_tensorboard_command():
    reports = {
        "chief:0": {"kind": "training", "step": 600, "model_dir": "/runs/my run"},
        "evaluator:0": {"kind": "evaluation", "final": True, "step": 600,
                        "metrics": {"loss": 0.0749432, "accuracy": 0.974},
                        "model_dir": "/runs/my run",
                        "exports": ["/runs/my run/export/final/600"]}}
    result = JobResult(ok=True, reason="chief:0 and evaluator:0 finished successfully",
                       tasks=(TaskOutcome("chief:0", None, 0, False, 0, 1.0),),
                       reports=reports)
    assert result.summary().splitlines()[-3:] == [
        "final evaluation (evaluator:0, step 600): accuracy = 0.974, loss = 0.07494",
        "exported: /runs/my run/export/final/600",
        "tensorboard --logdir '/runs/my run'"]
    assert JobResult(ok=True, reason="ok").summary().splitlines()[-1] == "job succeeded in 0.0s: ok"


def _failed(name, code, lines):
    import types

    return types.SimpleNamespace(name=name, returncode=code, crashes_restarted=0,
                                 tail=lambda n=20: list(lines)[-n:])


def test_a_code_trainexec_gave_is_read_with_trainexecs_meaning():
    from trainexec.launch.result import failure_reason

    task = _failed("chief:0", 2, ["Traceback ...", "ConfigError: TF_CONFIG ...",
                                  "ERROR chief:0 exits 2: the configuration is wrong "
                                  "(TF_CONFIG, an argument) (permanent)"])
    reason, _ = failure_reason(task, max_restarts=0)
    assert reason.startswith("chief:0 failed with exit code 2: the configuration is wrong")


def test_a_programs_own_code_is_not_read_as_trainexecs():
    from trainexec.launch.result import failure_reason

    # `python train.py` where there is no train.py: Python's own 2.
    task = _failed("worker:0", 2, ["python: can't open file '/run/train.py': "
                                   "[Errno 2] No such file or directory"])
    reason, lines = failure_reason(task, max_restarts=0)
    first = reason.splitlines()[0]
    assert first.startswith("worker:0 failed with exit code 2: the program's own code, "
                            "not trainexec's")
    assert "it would read: the configuration is wrong" in first
    assert "can't open file" in reason and lines == task.tail()
