"""trainexec.estimator's own Estimator as a real cluster on every TensorFlow line: chief,
worker, ps and evaluator (`trainexec launch --ps 1 --workers 1 --evaluator`), variables
on the ps, the final checkpoint evaluated and exported once, every task exiting 0."""

import glob
import json
import sys

import pytest
import tensorflow as tf

from trainexec.examples.estimator_job import local_training_steps
from trainexec.launch import LocalCluster
from trainexec.records.completion import read_training_complete

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]


def test_native_estimator_cluster_trains_evaluates_and_exports_once(tmp_path):
    model_dir = str(tmp_path / "model")
    command = [sys.executable, "-m", "trainexec.examples.estimator_job", "--engine", "native",
               "--model-dir", model_dir, "--max-steps", "300", "--throttle-secs", "1",
               "--worker-delay-secs", "1", "--result-file", str(tmp_path / "result.json")]
    lines = []
    with LocalCluster(command, workers=1, ps=1, evaluator=True, grace_secs=3,
                      output=lines.append,
                      wait_for=["chief", "worker", "ps", "evaluator"]) as cluster:
        result = cluster.wait(timeout=300)
    assert result.ok, result.reason
    for task in result.tasks:
        assert task.exit == "0", result.summary()
    # Between-graph replication: both training tasks ran steps of the one global step.
    chief, worker = (local_training_steps(lines, task) for task in ("chief:0", "worker:0"))
    assert chief and worker and chief + worker >= 300
    done = read_training_complete(model_dir)
    assert done is not None and done.global_step >= 300
    evaluated = json.loads((tmp_path / "result.json").read_text())
    # The final checkpoint, or its step plus the worker's last updates: between-graph
    # training is asynchronous, so the worker may apply a step while the chief saves
    # model.ckpt-300 (its file named by the step read just before).
    assert evaluated["metrics"]["global_step"] >= done.global_step
    assert evaluated["metrics"]["accuracy"] > 0.9
    exports = glob.glob(f"{model_dir}/export/final/[0-9]*")
    assert len(exports) == 1
    served = tf.saved_model.load(exports[0]).signatures["serving_default"]
    assert "probabilities" in served.structured_outputs
