"""trainexec/keras/fit/distributed_fit.py with real processes: a MultiWorkerMirroredStrategy job
(chief + 1 worker, tests/keras_programs/loop_curve.py) trains as Keras's own `fit` does in
one process on the same global batches, and every task ends with the same weights; a
train_step that cannot run in a replica context stops the job before training, naming the
fix. On Keras 3 the job trains with trainexec's loop; on tf_keras the same test holds
tf_keras' `fit` under the strategy to the same curve.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from processes import ROOT, alive, child_env
from trainexec.launch import LocalCluster

PROGRAMS = os.path.join(ROOT, "tests", "keras_programs")
sys.path.insert(0, PROGRAMS)
import keras_toy  # noqa: E402

PROGRAM = os.path.join(PROGRAMS, "loop_curve.py")
pytestmark = [pytest.mark.tf_line, pytest.mark.cluster, pytest.mark.keras]

# Per-epoch mean losses (10 steps of a 48-example global batch, Adam on a decaying rate,
# L2 on a layer): 2 replicas of 24 sum in another order than 1 of 48, nothing more.
LOSS_TOLERANCE = dict(rel=2e-4, abs=1e-5)  # measured: equal to 5 decimals
WEIGHT_TOLERANCE = 1e-3  # absolute, after 80 steps


def _cluster(tmp_path, *extra, ps=0):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    lines = []
    env = {"TF_CPP_MIN_LOG_LEVEL": "3", "TMPDIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, PROGRAM, "--model-dir", str(model_dir),
               "--out", str(tmp_path / "{task}.json"), *extra]
    with LocalCluster(command, workers=1, ps=ps, grace_secs=3, output=lines.append,
                      wait_for=["chief", "worker"] + ["ps"] * bool(ps), env=env) as cluster:
        result = cluster.wait(timeout=180)
        pids = [pid for task in cluster.tasks for pid in task.pids]
    assert [p for p in pids if alive(p)] == []
    return result, lines


def test_a_multi_worker_mirrored_job_trains_as_fit_in_one_process(tmp_path):
    result, lines = _cluster(tmp_path)
    assert result.ok, result.reason + "\n" + "\n".join(lines[-60:])
    if keras_toy.KERAS_3:
        assert any("training with trainexec's loop" in line for line in lines)
    done = subprocess.run([sys.executable, PROGRAM, "--model-dir", str(tmp_path / "one"),
                           "--out", str(tmp_path / "{task}.json")],
                          env={k: v for k, v in child_env().items() if k != "TF_CONFIG"},
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    one = json.loads((tmp_path / "local.json").read_text())
    chief = json.loads((tmp_path / "chief-0.json").read_text())
    worker = json.loads((tmp_path / "worker-0.json").read_text())
    assert len(chief["losses"]) == len(one["losses"]) == 8
    assert chief["losses"] == pytest.approx(one["losses"], **LOSS_TOLERANCE)
    assert worker["losses"] == chief["losses"]  # the logs are all replicas' mean
    assert one["losses"][-1] < one["losses"][0] / 3  # it learned
    for mine, theirs in zip(chief["weights"], worker["weights"]):
        assert np.array_equal(np.array(mine), np.array(theirs))  # the tasks agree exactly
    for mine, reference in zip(chief["weights"], one["weights"]):
        np.testing.assert_allclose(np.array(mine), np.array(reference), atol=WEIGHT_TOLERANCE)
    print("per-epoch loss, loop vs fit:", [f"{a:.5f}/{b:.5f}" for a, b in
                                          zip(chief["losses"], one["losses"])])


@pytest.mark.skipif(not keras_toy.KERAS_3, reason=(
    "tf_keras' fit runs train_step itself; only trainexec's loop for Keras 3 checks it"))
@pytest.mark.parametrize("ps, strategy", [(0, "MultiWorkerMirroredStrategy"),
                                          (1, "ParameterServerStrategy")])
def test_a_train_step_that_needs_a_cross_replica_context_stops_the_job_before_training(
        tmp_path, ps, strategy):
    result, lines = _cluster(tmp_path, "--bad-train-step", ps=ps)
    # A task exits 2, a configuration error (permanent): the job fails with the first to
    # exit, and the launcher stops the others unless they exited 2 too. Under MWMS the
    # chief and the worker both trace the step; under PSS only the chief does (the
    # worker and the ps serve until they are stopped).
    exits = {t.name: t.exit for t in result.tasks}
    assert not result.ok and "failed with exit code 2" in result.reason, result.summary()
    assert "2" in exits.values() and set(exits.values()) <= {"2", "stopped"}, exits
    if ps:
        assert exits == {"chief:0": "2", "worker:0": "stopped", "ps:0": "stopped"}, exits
    said = [line for line in lines if "loop_curve.py: ReducesInTrainStep.train_step" in line]
    assert said, "\n".join(lines[-40:])
    for words in (f"failed when traced in a replica context under {strategy} (",
                  "it may use cross-replica calls", "no cross-replica calls",
                  "TF_USE_LEGACY_KERAS=1", "[raised from RuntimeError]"):
        assert words in said[0], said[0]
    assert not os.path.exists(tmp_path / "model" / "checkpoint")  # no step was saved
