"""Each Slurm task's verdict and the job's decision (trainexec.contract.slurm_outcome)."""

import pytest

from trainexec.contract.slurm_outcome import (FAIL, REQUEUE, SUCCEED, TaskVerdict, decide,
                                     read_verdicts, write_verdict)

pytestmark = pytest.mark.any_line

TASKS = ["chief:0", "worker:0", "worker:1", "evaluator:0"]


def verdicts(**codes):
    """worker_1=143 -> {"worker:1": TaskVerdict(...)}; the other TASKS end 0."""
    named = {task.replace(":", "_"): task for task in TASKS}
    ends = {task: 0 for task in TASKS}
    ends.update({named[key]: code for key, code in codes.items() if code is not None})
    gone = {named[key] for key, code in codes.items() if code is None}
    return {task: TaskVerdict(task, "", code) for task, code in ends.items() if task not in gone}


@pytest.mark.parametrize("ends, restarts, action, code, words", [
    (verdicts(), 0, SUCCEED, 0, "all 4 tasks ended 0"),
    # srun would say 143 here (the highest code): the permanent 1 decides.
    (verdicts(worker_1=1, chief_0=143), 0, FAIL, 1, "worker:1 ended 1"),
    (verdicts(chief_0=2), 0, FAIL, 2, "without requeue"),
    (verdicts(chief_0=143, worker_0=143, worker_1=143, evaluator_0=143), 0, REQUEUE, 143,
     "requeue 1 of 2"),
    (verdicts(worker_0=170), 1, REQUEUE, 170, "requeue 2 of 2"),
    (verdicts(worker_1=None), 0, REQUEUE, 170, "worker:1 left no verdict"),  # node lost
    (verdicts(worker_0=143), 2, FAIL, 143, "requeued 2 times already"),
    # A step trainexec could not place (e.g. cyclic): each task's verdict is 2, by rank.
    ({"rank:1": TaskVerdict("rank:1", "config_error", 2)}, 0, FAIL, 2, "rank:1 ended 2"),
])
def test_the_job_decides_from_its_tasks_verdicts(ends, restarts, action, code, words):
    decision = decide(ends, TASKS, restarts, max_restarts=2)
    assert (decision.action, decision.exit_code) == (action, code)
    assert words in decision.reason


def test_verdicts_round_trip_under_the_runs_records(tmp_path):
    write_verdict(str(tmp_path), "7-0", "worker:1", -15, node="n10")  # killed by SIGTERM
    write_verdict(str(tmp_path), "7-0", "chief:0", 1)
    write_verdict(str(tmp_path), "7-1", "chief:0", 0)
    (tmp_path / "trainexec" / "slurm" / "7-0" / "ps-0.json").write_text("{not json")
    read = read_verdicts(str(tmp_path), "7-0")
    assert sorted(read) == ["chief:0", "worker:1"]  # the unreadable one is absent
    assert (read["worker:1"].code, read["worker:1"].cause, read["worker:1"].node) == (
        143, "preempted", "n10")
    assert (read["chief:0"].code, read["chief:0"].cause) == (1, "user_error")
    assert read_verdicts(str(tmp_path), "7-1")["chief:0"].cause == "done"
    assert read_verdicts(str(tmp_path), "8-0") == {}
