"""Faults and preemption of KerasTrainer clusters under the launcher, with real processes:
trainexec/keras/faults/preemption.py, trainexec/launch/restart_groups.py and the launcher's
policy (trainexec/launch/policy.py, table-tested in tests/test_launch_policy.py).
A local run's preemption (one process) is tests/test_keras_faults_preemption.py.

One row per fault; each asserts what a user sees (the job completes to max_steps, one
restart per fault), that nothing was lost (the resumed step is the step saved), and that
no process survives.
"""

import json
import os
import re
import signal
import sys
import time

import pytest

from processes import ROOT, alive, wait_until
from trainexec.records.completion import read_training_complete
from trainexec.launch import LocalCluster
from trainexec.contract.exit_codes import PREEMPTED_EXIT_CODE

PROGRAMS = os.path.join(ROOT, "tests", "keras_programs")
sys.path.insert(0, PROGRAMS)
import keras_toy  # noqa: E402

JOB = os.path.join(PROGRAMS, "job.py")
pytestmark = [
    pytest.mark.tf_line, pytest.mark.cluster,
    pytest.mark.keras,
]


class Job:
    """A KerasTrainer job under LocalCluster, with a fault injected from outside
    (as a cluster manager or the kernel would: not through the launcher)."""

    def __init__(self, tmp_path, workers, ps=0, evaluator=False, max_steps=200,
                 save_steps=20, max_restarts=1):
        self.model_dir = str(tmp_path / "model")
        os.makedirs(self.model_dir)
        self.max_steps = max_steps
        self.result_file = tmp_path / "result.json"
        self.lines = []
        self.times = []  # time.monotonic() of each line
        command = [sys.executable, JOB, "--model-dir", self.model_dir, "--max-steps",
                   str(max_steps), "--save-steps", str(save_steps), "--input", "global",
                   "--result-file", str(self.result_file)]
        env = {"TF_CPP_MIN_LOG_LEVEL": "3", "TMPDIR": str(tmp_path),
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        wait_for = ["chief", "worker"] + (["ps"] if ps else []) + (
            ["evaluator"] if evaluator else [])  # every task ends by itself
        self.cluster = LocalCluster(command, workers=workers, ps=ps, evaluator=evaluator,
                                    grace_secs=3, wait_for=wait_for, output=self._output, env=env,
                                    max_restarts=max_restarts)

    def _output(self, line):
        self.times.append(time.monotonic())
        self.lines.append(line)
        # Captured by pytest: a failed test shows every task's output, with its time.
        print(f"{self.times[-1]:.3f} {line}", flush=True)

    def __enter__(self):
        self.cluster.start()
        return self

    def __exit__(self, *exc):
        self.cluster.stop_all()

    def wait_for_checkpoint(self, step, timeout=60):
        path = os.path.join(self.model_dir, f"ckpt-{step}.index")
        wait_until(lambda: os.path.exists(path), timeout=timeout, what=path)

    def signal(self, task, sig):
        os.kill(self.cluster.task(task).pid, sig)
        self.signalled_at = time.monotonic()

    def finish(self, timeout=120):
        result = self.cluster.wait(timeout=timeout)
        pids = [pid for task in self.cluster.tasks for pid in task.pids]
        assert result.ok, result.reason + "\n" + "\n".join(self.lines[-80:])
        assert [p for p in pids if alive(p)] == []
        done = read_training_complete(self.model_dir)
        assert (done.global_step, os.path.basename(done.checkpoint)) == (
            self.max_steps, f"ckpt-{self.max_steps}")
        return result

    def said(self, task, pattern):
        """The match of `pattern` in trainexec's log lines of `task`."""
        found = [re.search(pattern, line) for line in self.lines
                 if _trainexec_line(line, task)]
        return [m for m in found if m]

    def resumed_after_secs(self, task):
        """Seconds from the fault to `task`'s line saying where it resumes."""
        for at, line in zip(self.times, self.lines):
            if at > self.signalled_at and _trainexec_line(line, task) and \
                    "training resumes at step" in line:
                return at - self.signalled_at
        return None


def _latest_step(model_dir):
    state = os.path.join(model_dir, "checkpoint")
    found = re.search(r'^model_checkpoint_path: ".*ckpt-(\d+)"', open(state).read(), re.M) \
        if os.path.exists(state) else None
    return int(found.group(1)) if found else 0


def _restarts(result):
    return {t.name: t.restarts for t in result.tasks}


@pytest.mark.full_suite(covered_by=(
    "test_readme_launch.py::test_pytest_fixture_example (the guide's killed worker: "
    "its group restarts once, together, and trains to the end) and the SIGTERMed "
    "worker below (the group's restarts and the resumed step)"))
def test_a_killed_multi_worker_mirrored_worker_restarts_its_group_once(tmp_path):
    """kill -9 of the worker: the chief, blocked in the step's collective, is
    stopped with it and both start again together, one restart; the evaluator
    carries on and evaluates the final checkpoint."""
    with Job(tmp_path, workers=1, evaluator=True, max_restarts=1) as job:
        job.wait_for_checkpoint(40)
        job.signal("worker:0", signal.SIGKILL)
        result = job.finish()
    assert result.restarts == 1, result.summary()
    assert _restarts(result) == {"chief:0": 1, "worker:0": 1, "evaluator:0": 0}, \
        result.summary()
    assert all(t.exit == "0" and not t.stopped for t in result.tasks), result.summary()
    resumed = job.said("chief:0", r"Restored .*/ckpt-(\d+): training resumes at step (\d+)")
    assert len(resumed) == 1 and int(resumed[0].group(1)) >= 40
    metrics = json.loads(job.result_file.read_text())["metrics"]
    assert metrics["global_step"] == job.max_steps and "loss" in metrics
    print(f"resumed {job.resumed_after_secs('chief:0'):.1f}s after the kill")


def test_a_killed_parameter_server_worker_is_restarted_alone(tmp_path):
    """kill -9 of a PSS worker: the coordinator goes on with the other worker; the
    launcher restarts the dead one alone, which then serves until the chief is done."""
    with Job(tmp_path, workers=2, ps=1, max_restarts=1) as job:
        job.wait_for_checkpoint(40)
        chief_pid = job.cluster.task("chief:0").pid
        job.signal("worker:1", signal.SIGKILL)
        result = job.finish()
    # TensorFlow 2.15 once (CI, before any fault) sent worker:0 a request of garbage
    # bytes from the chief ("contains invalid UTF-8"; the worker: "Unable to parse
    # request"): the chief ends as peer_lost (170) and its group, chief and ps, restarts
    # from the last checkpoint. Then that restart is TensorFlow's, and counted as such.
    garbled = int(any(line.startswith("[chief:0]") and "Unable to parse request" in line
                      for line in job.lines))
    assert result.restarts == 1 + garbled, result.summary()
    assert _restarts(result) == {"chief:0": garbled, "worker:0": 0, "worker:1": 1,
                                 "ps:0": garbled}, result.summary()
    if not garbled:
        assert job.cluster.task("chief:0").pids == [chief_pid]  # training never stopped
    assert all(t.exit == "0" and not t.stopped for t in result.tasks), result.summary()
    # Back before or after the chief finished (its TensorFlow import takes seconds),
    # it stopped serving by itself, for one of the three reasons serving gives
    # (trainexec.tasks.serving: the chief's finished record, the completion record of
    # this run seen while serving, or the completion record with the checkpoint at
    # max_steps).
    assert job.said("worker:1", "stops serving: (chief:0 recorded|the chief recorded that "
                                "training is complete|the completion record)")
    # A step worker:1 was running may run again on worker:0 (at-least-once); the
    # chief then re-aligns its saves, so the run still ended at ckpt-200 (finish()).
    print("re-aligned:", [m.group(0) for m in job.said("chief:0", r"Step \d+ at the end")])


@pytest.mark.full_suite(covered_by=(
    "test_chaos.py[pss-gs-storage] (kill ps:0: the restarted pods, training again "
    "within its bound, the final step) and test_keras_trainer_clusters.py::"
    "test_a_restarted_parameter_server_chief_resumes_at_its_last_saved_step"))
def test_a_killed_parameter_server_brings_the_chief_back_which_resumes(tmp_path):
    """kill -9 of the ps: its variables are gone, so the launcher restarts it together
    with the chief (one restart), and the chief restores them from its last checkpoint;
    the workers keep serving."""
    with Job(tmp_path, workers=1, ps=1, max_steps=400, max_restarts=1) as job:
        job.wait_for_checkpoint(40)
        # The chief names a checkpoint in its `checkpoint` file after writing its files;
        # a kill in between would leave the previous one the latest.
        wait_until(lambda: _latest_step(job.model_dir) >= 40, timeout=60,
                   what="the checkpoint file to name ckpt-40")
        worker_pid = job.cluster.task("worker:0").pid
        job.signal("ps:0", signal.SIGKILL)
        result = job.finish()
    assert result.restarts == 1, result.summary()
    assert _restarts(result) == {"chief:0": 1, "worker:0": 0, "ps:0": 1}, result.summary()
    assert job.cluster.task("worker:0").pids == [worker_pid]
    assert all(t.exit == "0" and not t.stopped for t in result.tasks), result.summary()
    resumed = job.said("chief:0", r"Restored .*/ckpt-(\d+): training resumes at step (\d+)")
    assert len(resumed) == 1 and int(resumed[0].group(1)) >= 40, "\n".join(job.lines[-60:])
    print(f"resumed {job.resumed_after_secs('chief:0'):.1f}s after the kill")


def test_a_sigtermed_multi_worker_mirrored_worker_saves_and_the_job_resumes_there(
        tmp_path, caplog):
    """SIGTERM reaches one worker only: every task saves after the same step (the
    chief writes ckpt-<step>), exits 143 (the preempted code), and the group resumes
    from that save, not from the periodic save before it."""
    with Job(tmp_path, workers=1, max_steps=400, save_steps=100, max_restarts=1) as job:
        job.wait_for_checkpoint(100)
        job.signal("worker:0", signal.SIGTERM)
        result = job.finish()
    saved = job.said("chief:0", r"Preempted \(SIGTERM\): saved (\S+)/ckpt-(\d+) at step (\d+)")
    assert len(saved) == 1, "\n".join(job.lines[-60:])
    step = int(saved[0].group(3))
    assert saved[0].group(1) == job.model_dir and int(saved[0].group(2)) == step
    assert job.said("worker:0", rf"Preempted \(SIGTERM\): saved this task's part .* "
                    rf"at step {step};")
    resumed = job.said("chief:0", r"Restored .*/ckpt-(\d+): training resumes at step (\d+)")
    assert [(int(m.group(1)), int(m.group(2))) for m in resumed] == [(step, step)]
    assert 100 < step < job.max_steps
    assert result.restarts == 1 and _restarts(result) == {"chief:0": 1, "worker:0": 1}
    # Both saved and exit 143; whichever the launcher sees first restarts the group.
    restarted = [m for m in caplog.messages
                 if f"failed with exit code {PREEMPTED_EXIT_CODE}: restarting it together" in m]
    assert len(restarted) == 1, caplog.messages
    print(f"resumed {job.resumed_after_secs('chief:0'):.1f}s after the SIGTERM")


def _trainexec_line(line, task):
    """A log line of trainexec's own, from `task` (prefixed once, by the launcher)."""
    return re.match(rf"\[{re.escape(task)}\] (DEBUG|INFO|WARNING|ERROR) trainexec\.", line) is not None
