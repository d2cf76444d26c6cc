"""trainexec.estimator with a RunConfig `train_distribute` strategy as a real cluster
(`trainexec launch`'s LocalCluster), on every TensorFlow line, the strategy built by the
program as TensorFlow's multi-worker Estimator tutorial builds it (before anything else,
with TF_CONFIG set):

* MultiWorkerMirroredStrategy: the chief and the worker each run every step (synchronous
  all-reduce), the chief writes the checkpoints (the worker its scratch directory), the
  evaluator evaluates the final checkpoint and exports once, and a plain Estimator reads
  the same checkpoint to the same metrics; the same with two workers and no chief
  (the tutorial's cluster), worker 0 leading;
* tf.compat.v1's ParameterServerStrategy: chief, worker and ps, between-graph, the
  final checkpoint evaluated and exported once;
* a MultiWorkerMirroredStrategy worker killed (kill -9, or SIGTERM) mid-training: its restart group
  (chief and worker, as the tasks announce it) restarts together once, both resume
  from the chief's last checkpoint and finish; the evaluator carries on. The same for a
  preemption's SIGTERM: the task leaves with the preempted code (saving nothing);
* a MultiWorkerMirroredStrategy worker frozen (SIGSTOP) for good: the chief, whose step
  waits for it, leaves as a lost peer once the worker's heartbeats have been silent for
  `TRAINEXEC_PEER_SILENT_SECS`, and the group restarts and finishes (before, a frozen
  peer held the group until it thawed).

Every task exits 0 and none survives. On TensorFlow 2.15, tf.estimator's Estimator of
the same model_fn evaluates the MultiWorkerMirroredStrategy's and the
ParameterServerStrategy's checkpoints to the same metrics as trainexec.estimator."""

import glob
import json
import os
import signal
import sys

import pytest
import tensorflow as tf

from processes import alive, wait_until
import trainexec.estimator as te
from trainexec.examples import estimator_job
from trainexec.examples.estimator_job import (build_specs, local_training_steps,
                                              make_estimator)
from trainexec.launch import LocalCluster
from trainexec.records.completion import read_training_complete

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]

MAX_STEPS = 100


def _run(tmp_path, strategy, ps, max_steps=MAX_STEPS, fault=None, max_restarts=0,
         chief=True, api="trainexec", env=None):
    """Runs the example job as chief, worker, evaluator (and `ps` ps tasks; without
    `chief`, two workers), through trainexec.train_and_evaluate on trainexec.estimator
    (`api="tf"`: tf.estimator.train_and_evaluate on tf.estimator, TensorFlow 2.15);
    `fault(cluster, model_dir)` is called once every task has started. Returns
    (model_dir, output lines, the evaluator's result, the launcher's result)."""
    model_dir = str(tmp_path / "model")
    engine = ["--api", "tf"] if api == "tf" else ["--engine", "native"]
    command = [sys.executable, "-m", "trainexec.examples.estimator_job", *engine,
               "--strategy", strategy, "--model-dir", model_dir,
               "--max-steps", str(max_steps), "--throttle-secs", "1",
               "--worker-delay-secs", "1", "--result-file", str(tmp_path / "result.json")]
    lines = []

    def output(line):
        lines.append(line)
        print(line, flush=True)  # captured: a failed test shows every task's output

    wait_for = ["chief"] * chief + ["worker", "evaluator"] + (["ps"] if ps else [])
    with LocalCluster(command, workers=1 if chief else 2, chief=chief, ps=ps,
                      evaluator=True, grace_secs=3,
                      output=output, wait_for=wait_for,
                      max_restarts=max_restarts, env=env) as cluster:
        if fault is not None:
            fault(cluster, model_dir)
        result = cluster.wait(timeout=300)
        pids = [pid for task in cluster.tasks for pid in task.pids]
    assert result.ok, result.reason + "\n" + "\n".join(lines[-60:])
    for task in result.tasks:
        assert task.exit == "0", result.summary()
    assert [pid for pid in pids if alive(pid)] == []
    # tf.estimator's train_and_evaluate returns nothing under a strategy: no result.
    evaluated = (None if api == "tf"
                 else json.loads((tmp_path / "result.json").read_text()))
    return model_dir, lines, evaluated, result


@pytest.mark.full_lines  # run 3: the [mwms-0] row below trains the same cluster
def test_multi_worker_mirrored_tasks_train_every_step_together(tmp_path):
    model_dir, lines, evaluated, _ = _run(tmp_path, "mwms", ps=0)
    # Synchronous all-reduce: each training task ran every step of the one global step.
    assert [local_training_steps(lines, task) for task in ("chief:0", "worker:0")] == [
        MAX_STEPS, MAX_STEPS]
    assert any("[chief:0] " in line and "already serves this task" in line
               for line in lines)  # the strategy's own server, not a second one
    done = read_training_complete(model_dir)
    assert done is not None and done.global_step == MAX_STEPS
    assert evaluated["metrics"]["global_step"] == MAX_STEPS
    assert evaluated["metrics"]["accuracy"] > 0.9
    # The chief writes the run's checkpoints; the worker saves into its scratch directory.
    assert os.path.isfile(os.path.join(model_dir, f"model.ckpt-{MAX_STEPS}.index"))
    assert os.path.isdir(os.path.join(model_dir, "tmp_worker_0"))
    assert len(glob.glob(f"{model_dir}/export/final/[0-9]*")) == 1
    # The checkpoint holds the variables under their own names: a plain Estimator (no
    # strategy) reads it to the evaluator's metrics.
    _, eval_spec = build_specs(MAX_STEPS, engine="native")
    plain = make_estimator(model_dir, engine="native").evaluate(eval_spec.input_fn,
                                                                name="plain")
    assert plain["global_step"] == MAX_STEPS
    for key in ("accuracy", "loss"):
        assert plain[key] == pytest.approx(evaluated["metrics"][key], abs=1e-5)


def test_multi_worker_mirrored_workers_alone_train_worker_0_leading(tmp_path):
    """TensorFlow's multi-worker Estimator tutorial's cluster: two workers, no chief."""
    model_dir, lines, evaluated, _ = _run(tmp_path, "mwms", ps=0, chief=False)
    assert [local_training_steps(lines, task) for task in ("worker:0", "worker:1")] == [
        MAX_STEPS, MAX_STEPS]
    assert os.path.isfile(os.path.join(model_dir, f"model.ckpt-{MAX_STEPS}.index"))
    assert os.path.isdir(os.path.join(model_dir, "tmp_worker_1"))
    assert not os.path.exists(os.path.join(model_dir, "tmp_worker_0"))  # it leads
    assert evaluated["metrics"]["global_step"] == MAX_STEPS
    assert len(glob.glob(f"{model_dir}/export/final/[0-9]*")) == 1


def test_parameter_server_strategy_trains_between_graph_with_the_ps(tmp_path):
    model_dir, lines, evaluated, _ = _run(tmp_path, "ps", ps=1)
    chief, worker = (local_training_steps(lines, task) for task in ("chief:0", "worker:0"))
    assert chief and worker is not None and chief + worker >= MAX_STEPS
    done = read_training_complete(model_dir)
    assert done is not None and done.global_step >= MAX_STEPS
    assert evaluated["metrics"]["global_step"] >= done.global_step
    assert evaluated["metrics"]["accuracy"] > 0.9
    exports = glob.glob(f"{model_dir}/export/final/[0-9]*")
    assert len(exports) == 1
    served = tf.saved_model.load(exports[0]).signatures["serving_default"]
    assert "probabilities" in served.structured_outputs


@pytest.mark.parametrize("sig", [
    pytest.param(signal.SIGKILL, id="kill", marks=pytest.mark.full_suite(covered_by=(
        "the [sigterm] row (every line: the launcher restarts the group, which resumes "
        "from the chief's checkpoint); on current TensorFlow, as root, test_chaos.py::"
        "test_chaos_schedules_keep_every_promise[estimator-mwms-worker-killed] (this "
        "job, a worker killed: its group restarts and trains to the final step, one "
        "export); test_keras_faults.py::test_a_killed_parameter_server_worker_is_"
        "restarted_alone (the launcher restarts a killed task)"))),
    pytest.param(signal.SIGTERM, id="sigterm"),
])
def test_a_killed_multi_worker_mirrored_worker_restarts_its_group_which_resumes(tmp_path,
                                                                                sig):
    """kill -9, or a preemption's SIGTERM: the group restarts and resumes from the
    chief's last checkpoint."""
    def kill_the_worker(cluster, model_dir):
        first = os.path.join(model_dir, "model.ckpt-100.index")
        wait_until(lambda: os.path.exists(first), timeout=120, what=first)
        os.kill(cluster.task("worker:0").pid, sig)

    max_steps = 600
    model_dir, lines, evaluated, result = _run(tmp_path, "mwms", ps=0, max_steps=max_steps,
                                               fault=kill_the_worker, max_restarts=1)
    assert {t.name: t.restarts for t in result.tasks} == {
        "chief:0": 1, "worker:0": 1, "evaluator:0": 0}, result.summary()
    # Both resumed from a checkpoint the chief wrote before the kill (at step 100 or
    # later): the restarted tasks ran the rest of the steps, each all of them.
    after = [local_training_steps(lines, task) for task in ("chief:0", "worker:0")]
    assert after[0] == after[1] and 0 < after[0] <= max_steps - 100, after
    done = read_training_complete(model_dir)
    assert done is not None and done.global_step == max_steps
    assert evaluated["metrics"]["global_step"] == max_steps
    assert len(glob.glob(f"{model_dir}/export/final/[0-9]*")) == 1


@pytest.mark.full_lines  # the heartbeats are trainexec's own, the same on every line
def test_a_worker_frozen_for_good_is_left_by_its_group_which_restarts(tmp_path):
    """SIGSTOP: the worker answers nothing, and TensorFlow ends no step of its group.
    The chief's watch of its peers' heartbeats (trainexec.tasks.peer_heartbeats) ends
    the chief with 170 about 8 s after the worker's last beat; the launcher restarts the
    group (the frozen worker killed), which resumes and trains to max_steps."""
    frozen = []

    def freeze_the_worker(cluster, model_dir):
        first = os.path.join(model_dir, "model.ckpt-100.index")
        wait_until(lambda: os.path.exists(first), timeout=120, what=first)
        frozen.append(cluster.task("worker:0").pid)
        os.kill(frozen[0], signal.SIGSTOP)

    max_steps = 600
    model_dir, lines, evaluated, result = _run(
        tmp_path, "mwms", ps=0, max_steps=max_steps, fault=freeze_the_worker,
        max_restarts=1, env={"TRAINEXEC_PEER_SILENT_SECS": "8"})
    assert not alive(frozen[0])
    assert {t.name: t.restarts for t in result.tasks} == {
        "chief:0": 1, "worker:0": 1, "evaluator:0": 0}, result.summary()
    left = [line for line in lines if line.startswith("[chief:0] ")
            and "worker:0 of its MultiWorkerMirroredStrategy group has not written a "
                "heartbeat for" in line]
    assert left and "leaving with exit code 170" in left[0], "\n".join(lines[-40:])
    done = read_training_complete(model_dir)
    assert done is not None and done.global_step == max_steps
    assert evaluated["metrics"]["global_step"] == max_steps
    assert len(glob.glob(f"{model_dir}/export/final/[0-9]*")) == 1


@pytest.mark.estimator
@pytest.mark.parametrize("strategy, ps", [("mwms", 0), ("ps", 1)])
def test_tf_estimator_reads_the_clusters_checkpoint_to_the_same_metrics(tmp_path, strategy,
                                                                       ps):
    """TensorFlow 2.15: the checkpoint a strategy's cluster wrote evaluates to the same
    metrics under tf.estimator's Estimator of the same model_fn as under
    trainexec.estimator's, each with and without a MirroredStrategy to evaluate."""
    model_dir, _, evaluated, _ = _run(tmp_path, strategy, ps=ps)
    _both_engines_evaluate_alike(model_dir, evaluated, exact=strategy == "mwms")


@pytest.mark.estimator
def test_trainexec_reads_what_tf_estimator_trained_under_the_strategy(tmp_path):
    """TensorFlow 2.15: the checkpoint tf.estimator's own train_and_evaluate wrote on a
    MultiWorkerMirroredStrategy cluster (chief, worker, evaluator, through its
    distribute coordinator) evaluates to the same metrics under trainexec.estimator's Estimator as
    under tf.estimator's, each with and without a MirroredStrategy to evaluate (the job
    trains tf.estimator's DNNClassifier: trainexec's DNNClassifier reads it)."""
    model_dir, _, _, _ = _run(tmp_path, "mwms", ps=0, api="tf")
    assert tf.train.load_variable(model_dir, "global_step") == MAX_STEPS
    _both_engines_evaluate_alike(model_dir, None, build=_dnn_classifier)


def _custom(api, engine, config):
    """The job's own model_fn, on `api`'s Estimator (what trainexec's job trains)."""
    return api.Estimator(estimator_job.model_fn, config=config, params={"engine": engine})


def _dnn_classifier(api, engine, config):
    """The job's DNNClassifier (what the job trains on tf.estimator), on `api`'s."""
    return api.DNNClassifier(
        hidden_units=[estimator_job.HIDDEN_UNITS], n_classes=estimator_job.CLASSES,
        feature_columns=[tf.feature_column.numeric_column(
            "x", shape=(estimator_job.FEATURES,))], config=config)


def _both_engines_evaluate_alike(model_dir, evaluated, build=_custom, exact=True):
    from trainexec.estimator_trainer.availability import tf_estimator

    _, eval_spec = build_specs(MAX_STEPS, engine="native")
    checkpoint = tf.train.latest_checkpoint(model_dir)
    for evaluate in (None, tf.distribute.MirroredStrategy()):
        results = []
        for engine, api in (("tf", tf_estimator()), ("native", te)):
            config = api.RunConfig(model_dir=model_dir, eval_distribute=evaluate)
            estimator = build(api, engine, config)
            results.append(estimator.evaluate(eval_spec.input_fn, checkpoint_path=checkpoint,
                                              name=engine))
        theirs, ours = results
        assert set(ours) == set(theirs)
        for key in theirs:
            assert ours[key] == pytest.approx(theirs[key], abs=1e-5), key
        # The final checkpoint: at max_steps under MultiWorkerMirroredStrategy (every
        # task takes every step); between-graph ps training can pass it by the step the
        # other training task had in flight (101 seen in a rehearsal), as under
        # tf.estimator: here one chief and one worker, so by one at most.
        assert (ours["global_step"] == MAX_STEPS if exact
                else MAX_STEPS <= ours["global_step"] <= MAX_STEPS + 1), ours
        if evaluated is not None:  # and as the cluster's evaluator found
            assert ours["accuracy"] == pytest.approx(evaluated["metrics"]["accuracy"],
                                                     abs=1e-5)
