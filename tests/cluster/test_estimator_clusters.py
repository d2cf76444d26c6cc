"""A real Estimator job as a real cluster: chief, 2 workers, ps and evaluator, each
in its own process with its own TF_CONFIG (ports from portpicker on 127.0.0.1)."""

import glob
import json
import os
import sys

import pytest

from trainexec.records.completion import read_training_complete
from trainexec.examples.estimator_job import local_training_steps
from trainexec.launch import LocalCluster
from processes import alive

# Every test runs estimator_job, which needs tf.estimator.
pytestmark = [pytest.mark.tf_line, pytest.mark.cluster, pytest.mark.estimator]


def local_steps(lines: list[str], task: str) -> int:
    steps = local_training_steps(lines, task)
    assert steps is not None, f"{task} printed no closing line"
    return steps


def test_estimator_cluster_trains_to_max_steps_and_exports(tmp_path):
    model_dir = str(tmp_path / "model")
    command = [sys.executable, "-m", "trainexec.examples.estimator_job",
               "--model-dir", model_dir, "--max-steps", "300", "--throttle-secs", "2",
               "--worker-delay-secs", "1", "--result-file", str(tmp_path / "result.json")]
    lines = []
    with LocalCluster(command, workers=2, ps=1, evaluator=True, grace_secs=3,
                      output=lines.append,
                      wait_for=["chief", "worker", "ps", "evaluator"]) as cluster:
        result = cluster.wait(timeout=300)
        pids = [pid for task in cluster.tasks for pid in task.pids]
    assert result.ok, result.reason
    outcomes = {t.name: t for t in result.tasks}
    # Every task ended by itself: the ps too, once every training task finished.
    for name in ("chief:0", "worker:0", "worker:1", "ps:0", "evaluator:0"):
        assert outcomes[name].exit == "0", result.summary()
    # Every role ran, with its own TF_CONFIG, and said so.
    for role in ("chief:0", "worker:0", "worker:1", "ps:0", "evaluator:0"):
        assert any(line.startswith(f"[{role}] INFO trainexec.executor: Running {role}")
                   for line in lines), role
    done = read_training_complete(model_dir)
    assert done is not None and done.global_step >= 300
    evaluated = json.loads((tmp_path / "result.json").read_text())
    assert evaluated["metrics"]["global_step"] >= 300
    assert evaluated["metrics"]["accuracy"] > 0.9
    (export,) = evaluated["exports"]
    assert os.path.exists(os.path.join(export, "saved_model.pb"))
    assert glob.glob(os.path.join(model_dir, "export", "final", "*", "saved_model.pb"))
    assert [p for p in pids if alive(p)] == []
    # The closing summary points to what to look at next, from the evaluator's record.
    summary = result.summary().splitlines()
    assert summary[-2:] == [f"exported: {export}", f"tensorboard --logdir {model_dir}"]
    assert summary[-3].startswith(
        f"final evaluation (evaluator:0, step {evaluated['metrics']['global_step']:.0f}): "
        f"accuracy = {evaluated['metrics']['accuracy']:.4g}"), summary[-3]


def test_workers_started_before_the_chief_join_training_and_finish_by_themselves(tmp_path):
    """Workers reach the "is the model initialized?" check before a late chief
    has built anything; they re-check every poll_secs (tasks/readiness.py),
    train their share once it is ready, and exit 0 at max_steps
    (benchmarks/late_chief.py measures the time saved)."""
    command = [sys.executable, "-m", "trainexec.examples.estimator_job", "--model-dir",
               str(tmp_path / "model"), "--max-steps", "600", "--worker-delay-secs", "0",
               "--late-chief-secs", "8"]
    lines = []
    with LocalCluster(command, workers=2, ps=1, grace_secs=3, output=lines.append,
                      wait_for=["chief", "worker"]) as cluster:
        result = cluster.wait(timeout=300)
    assert result.ok, result.reason + "\n" + "\n".join(lines[-40:])
    for name in ("chief:0", "worker:0", "worker:1"):
        assert cluster.task(name).returncode == 0 and not cluster.task(name).stopped
    # With TF's 30 s re-check the chief ran all the steps and each worker 1 (its
    # first step after waking stops it); here the three share them. 600 steps
    # (not 300) leave room for a worker that a loaded machine wakes late.
    shares = {t: local_steps(lines, t) for t in ("chief:0", "worker:0", "worker:1")}
    assert shares["worker:0"] >= 50 and shares["worker:1"] >= 50, shares
    assert read_training_complete(str(tmp_path / "model")).global_step >= 600


def test_master_and_ps_processes(tmp_path):
    """The TF 1.x layout: a master that trains and evaluates, and a ps that
    exits by itself once the master has finished."""
    import subprocess

    import portpicker

    ports = [portpicker.pick_unused_port() for _ in range(2)]
    cluster = {"master": [f"127.0.0.1:{ports[0]}"], "ps": [f"127.0.0.1:{ports[1]}"]}
    model_dir = str(tmp_path / "model")
    command = [sys.executable, "-m", "trainexec.examples.estimator_job", "--model-dir",
               model_dir, "--max-steps", "100", "--result-file",
               str(tmp_path / "result.json")]

    def start(task_type):
        env = dict(os.environ, TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": task_type, "index": 0}}))
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    ps = start("ps")
    try:
        assert start("master").wait(timeout=300) == 0
        assert ps.wait(timeout=60) == 0  # it exits by itself once the master finished
    finally:
        if ps.poll() is None:
            ps.kill()
            ps.wait()
    assert read_training_complete(model_dir).global_step == 100
    assert glob.glob(os.path.join(model_dir, "export", "final", "*", "saved_model.pb"))
