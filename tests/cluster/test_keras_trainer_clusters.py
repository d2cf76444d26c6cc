"""trainexec/keras/trainer.py (with keras/fit/training.py and tasks/serving.py): KerasTrainer
jobs as real clusters of processes under LocalCluster (tests/keras_programs/job.py as
every task): MultiWorkerMirroredStrategy and ParameterServerStrategy train to max_steps,
evaluate and export the final checkpoint, and a restarted chief resumes at its last save.
Local runs, in this process, are tests/test_keras_trainer.py.
"""

import json
import math
import os
import re
import statistics
import sys

import pytest
import tensorflow as tf

from event_files import scalars
from processes import ROOT, alive
from trainexec.records.completion import read_training_complete
from trainexec.launch import LocalCluster

PROGRAMS = os.path.join(ROOT, "tests", "keras_programs")
sys.path.insert(0, PROGRAMS)
import keras_toy  # noqa: E402

JOB = os.path.join(PROGRAMS, "job.py")
pytestmark = [pytest.mark.tf_line, pytest.mark.cluster, pytest.mark.keras]


def _run_cluster(tmp_path, workers, ps, evaluator, args, max_restarts=0, wait_for="all"):
    """Runs job.py as a cluster; `wait_for="all"` waits for every task, None leaves
    the launcher's default (the chief, the evaluator, and the tasks that announce
    they end by themselves)."""
    model_dir = str(tmp_path / "model")
    os.makedirs(model_dir)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    command = [sys.executable, JOB, "--model-dir", model_dir, *args]
    if wait_for == "all":
        wait_for = (["chief", "worker"] + (["ps"] if ps else [])
                    + (["evaluator"] if evaluator else []))
    lines = []
    env = {"TF_CPP_MIN_LOG_LEVEL": "3", "TMPDIR": str(tmp),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with LocalCluster(command, workers=workers, ps=ps, evaluator=evaluator, grace_secs=3,
                      output=lines.append, wait_for=wait_for, max_restarts=max_restarts,
                      env=env) as cluster:
        result = cluster.wait(timeout=120)
        pids = [pid for task in cluster.tasks for pid in task.pids]
    assert result.ok, result.reason + "\n" + "\n".join(lines[-60:])
    for outcome in result.tasks:  # every task ended by itself, with 0
        assert outcome.exit == "0" and not outcome.stopped, result.summary()
    assert [p for p in pids if alive(p)] == []
    # Non-chief MWMS workers took part in saving, in directories they then deleted.
    saved_apart = [line.split(" writing to ")[1].split(" ")[0] for line in lines
                   if "takes part in every save, writing to" in line]
    assert all(path.startswith(str(tmp)) and not os.path.exists(path)
               for path in saved_apart), saved_apart
    return model_dir, lines, saved_apart


def _check_final(model_dir, result_file, max_steps, model_name):
    final = os.path.join(model_dir, f"ckpt-{max_steps}")
    done = read_training_complete(model_dir)
    assert (done.global_step, done.checkpoint) == (max_steps, final)
    evaluated = json.loads(result_file.read_text())
    metrics = evaluated["metrics"]
    assert metrics["global_step"] == max_steps
    fresh = keras_toy.evaluate_checkpoint(model_name, final)
    assert {k: metrics[k] for k in fresh} == pytest.approx(fresh, rel=1e-5)
    # Not just any checkpoint: an earlier one scores differently.
    assert keras_toy.evaluate_checkpoint(
        model_name, os.path.join(model_dir, "ckpt-160"))["loss"] != \
        pytest.approx(fresh["loss"], rel=1e-3)
    assert evaluated["exports"] == [os.path.join(model_dir, "export", "final", str(max_steps))]
    if model_name == "custom":
        restored = keras_toy.restore(keras_toy.build_custom, final)
        assert float(restored.custom_steps.numpy()) == max_steps


def _said(lines, task, text):
    return any(line.startswith(f"[{task}] INFO trainexec.") and text in line
               for line in lines)


def _evaluated(lines):
    """{step: metrics} from the evaluator's "Evaluated <ckpt> (step N) in Xs: ..." lines."""
    found = {}
    for line in lines:
        match = re.match(r"\[evaluator:0\] INFO trainexec\.evaluation\.loop: Evaluated \S+ "
                         r"\(step (\d+)\) in \S+: (.*)$", line)
        if match:
            found[int(match.group(1))] = {
                name: float(value) for name, value in
                (item.split(" = ") for item in match.group(2).split(", "))}
    return found


def _check_summaries_and_progress(model_dir, lines, max_steps, every, replicas):
    """The chief's progress lines and TensorBoard summaries, read back with TensorBoard's
    reader: training scalars under model_dir at every progress step, the evaluator's
    metrics under model_dir/eval at each evaluated checkpoint's step, as it logged them."""
    steps = list(range(every, max_steps + 1, every))
    progress = [line for line in lines
                if line.startswith("[chief:0] INFO trainexec.keras.fit.progress: step ")]
    assert [line.split(": ")[1].split(" ")[1] for line in progress] == \
        [f"{step}/{max_steps}" for step in steps], progress
    assert all(" steps/s, " in line for line in progress), progress
    assert not [line for line in lines if "trainexec.keras.fit.progress" in line
                and not line.startswith("[chief:0]")]  # the chief only
    training = scalars(model_dir)
    assert sorted(training["loss"]) == steps and sorted(training["steps_per_sec"]) == steps
    logged = _evaluated(lines)
    assert max_steps in logged and len(logged) >= 2, logged
    evaluation = scalars(os.path.join(model_dir, "eval"))
    assert sorted(evaluation["loss"]) == sorted(logged)
    for step, metrics in logged.items():
        for name, value in metrics.items():
            if name != "global_step":
                assert evaluation[name][step] == pytest.approx(value, rel=1e-5), (name, step)
    # The training loss is the replicas' mean, not their sum (Keras 2 adds them up). At a
    # step both recorded, fit's loss (of one 48-sample batch, one step before the
    # checkpoint) sits near the checkpoint's evaluation loss: 1.28-1.32 times it at step
    # 200 with this seeded data, on Keras 3 and tf_keras; a sum would sit near `replicas`
    # times that. So the ratios' geometric mean must be closer to 1 than to `replicas` on
    # a log scale (for 3 replicas: between 0.58 and 1.73).
    common = sorted(set(training["loss"]) & set(logged))
    ratio = math.exp(statistics.fmean(
        math.log(training["loss"][step] / logged[step]["loss"]) for step in common))
    assert replicas ** -0.5 < ratio < replicas ** 0.5, (ratio, replicas, common, training,
                                                        logged)


def test_multi_worker_mirrored_cluster(tmp_path):
    result_file = tmp_path / "result.json"
    model_dir, lines, saved_apart = _run_cluster(
        tmp_path, workers=2, ps=0, evaluator=True,
        args=["--max-steps", "200", "--model", "custom", "--result-file", str(result_file),
              "--log-step-count-steps", "50"])
    _check_final(model_dir, result_file, 200, "custom")
    _check_summaries_and_progress(model_dir, lines, 200, 50, replicas=3)  # chief, 2 workers
    for task in ("chief:0", "worker:0", "worker:1"):
        assert _said(lines, task, f"Role: {task} trains (MultiWorkerMirroredStrategy)")
        assert os.path.exists(os.path.join(model_dir, "trainexec", "finished",
                                           task.replace(":", "-") + ".json"))
    assert _said(lines, "chief:0", "Saved checkpoint")
    assert not _said(lines, "worker:0", "Saved checkpoint")  # only the chief's count
    assert len(saved_apart) == 2  # worker:0 and worker:1


def test_parameter_server_cluster(tmp_path):
    """With the launcher's default success rule: the workers and ps announced that
    they end by themselves, so it waits for them instead of stopping them."""
    result_file = tmp_path / "result.json"
    model_dir, lines, _ = _run_cluster(
        tmp_path, workers=2, ps=1, evaluator=True, wait_for=None,
        args=["--max-steps", "200", "--model", "custom", "--result-file", str(result_file)])
    _check_final(model_dir, result_file, 200, "custom")
    assert _said(lines, "chief:0", "Role: chief:0 trains (ParameterServerStrategy)")
    # Progress from the coordinator, with the loss the workers' steps returned.
    progress = [line.split("trainexec.keras.fit.progress: ")[1] for line in lines
                if line.startswith("[chief:0] INFO trainexec.keras.fit.progress: ")]
    assert [line.split(":")[0] for line in progress] == ["step 100/200", "step 200/200"]
    assert all("loss = " in line for line in progress), progress
    for task in ("worker:0", "worker:1", "ps:0"):
        assert _said(lines, task, "stops serving: chief:0 recorded that its training finished")


@pytest.mark.full_lines
def test_a_restarted_parameter_server_chief_resumes_at_its_last_saved_step(tmp_path):
    """The chief dies at step 60 before saving it; the launcher restarts it. The
    workers and ps keep serving (they stop only once the chief has finished)."""
    model_dir, lines, _ = _run_cluster(
        tmp_path, workers=1, ps=1, evaluator=False, max_restarts=1,
        args=["--max-steps", "100", "--model", "custom", "--input", "global",
              "--crash-at-step", "60"])
    assert "[chief:0] job.py: crashing at step 60 as asked" in lines
    assert _said(lines, "chief:0", f"Restored {model_dir}/ckpt-40: training resumes at step 40")
    done = read_training_complete(model_dir)
    assert (done.global_step, os.path.basename(done.checkpoint)) == (100, "ckpt-100")
    restored = keras_toy.restore(keras_toy.build_custom, done.checkpoint)
    assert float(restored.custom_steps.numpy()) == 100
    assert tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths[-3:] == [
        os.path.join(model_dir, f"ckpt-{s}") for s in (60, 80, 100)]


@pytest.mark.full_lines
def test_a_chief_restarted_after_the_job_finished_ends_without_its_peers(tmp_path):
    """A parameter server chief whose pod restarts after the job finished (its process
    crashed on its way out) finds max_steps saved: it ends at once with 0, recording
    the run complete again, instead of waiting forever for workers and a ps that have
    left (here: nothing listens at their addresses)."""
    import subprocess

    import portpicker

    model_dir = str(tmp_path / "model")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TMPDIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("TF_CONFIG", None)
    command = [sys.executable, JOB, "--model-dir", model_dir, "--max-steps", "40",
               "--input", "global"]
    subprocess.run(command, env=env, check=True, timeout=120, capture_output=True)
    os.remove(os.path.join(model_dir, "trainexec", "training_complete.json"))
    address = lambda: f"127.0.0.1:{portpicker.pick_unused_port()}"  # noqa: E731
    env["TF_CONFIG"] = json.dumps({
        "cluster": {"chief": [address()], "worker": [address()], "ps": [address()]},
        "task": {"type": "chief", "index": 0}})
    done = subprocess.run(command, env=env, timeout=120, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"Skipping training: the newest checkpoint {model_dir}/ckpt-40 is at step 40" \
        in done.stderr, done.stderr[-3000:]
    record = read_training_complete(model_dir)
    assert (record.global_step, os.path.basename(record.checkpoint)) == (40, "ckpt-40")
