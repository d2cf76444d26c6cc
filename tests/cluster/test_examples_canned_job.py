"""The canned-estimator job (`trainexec.examples.canned_job`) as a real cluster on every
TensorFlow line: `trainexec launch --ps 1 --workers 1 --evaluator` of a wide-and-deep
`DNNLinearCombinedClassifier`, its variables on the ps, the final checkpoint evaluated
and exported once, every task exiting 0; and each model run locally."""

import glob
import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from trainexec.examples.estimator_job import local_training_steps
from trainexec.launch import LocalCluster
from trainexec.records.completion import read_training_complete

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]


def test_a_canned_job_on_a_ps_cluster_evaluates_and_exports_once(tmp_path):
    model_dir = str(tmp_path / "model")
    command = [sys.executable, "-m", "trainexec.examples.canned_job",
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
    chief, worker = (local_training_steps(lines, task) for task in ("chief:0", "worker:0"))
    assert chief and worker and chief + worker >= 300
    done = read_training_complete(model_dir)
    assert done is not None and done.global_step >= 300
    evaluated = json.loads((tmp_path / "result.json").read_text())
    assert evaluated["metrics"]["global_step"] >= done.global_step
    assert evaluated["metrics"]["accuracy"] > 0.9
    names = {name for name, _ in tf.train.list_variables(model_dir)}
    assert {"dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
            "linear/linear_model/x_bucketized/weights"} <= names
    exports = glob.glob(f"{model_dir}/export/final/[0-9]*")
    assert len(exports) == 1
    served = tf.saved_model.load(exports[0]).signatures["predict"]
    assert "probabilities" in served.structured_outputs


@pytest.mark.full_suite(covered_by=(
    "test_a_canned_job_on_a_ps_cluster_evaluates_and_exports_once (the same program's "
    "wide-and-deep model as a cluster) and the canned estimators' unit tests "
    "(test_estimator_engine_canned_*: each model trains, evaluates, exports)"))
@pytest.mark.parametrize("model", ["dnn", "linear"])
def test_each_canned_model_runs_locally(tmp_path, model):
    done = subprocess.run(
        [sys.executable, "-m", "trainexec.examples.canned_job", "--model", model,
         "--model-dir", str(tmp_path / "m"), "--max-steps", "200",
         "--result-file", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_CONFIG": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    evaluated = json.loads((tmp_path / "r.json").read_text())
    assert evaluated["metrics"]["global_step"] == 200
    assert evaluated["metrics"]["accuracy"] > 0.8
    assert len(evaluated["exports"]) == 1
