"""TensorFlow's official `r1/mnist` Estimator (tests/estimator_programs/r1_mnist.py) with
`--distribution_strategy mirrored` and its one estimator import changed to
trainexec.estimator trains and evaluates on this line, under the line's Keras and, where
this line has it, tf_keras too, as the program does unchanged on tf.estimator 2.15
(`TRAINEXEC_TF215_PYTHON`, which ./scripts/test.sh sets; on the 2.15 line itself, this
environment): two epochs, an evaluation after each, the evaluation loss falling to the
same neighbourhood. Each run is a process of its own (the program parses its flags and
builds its strategy at the start), all side by side."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from processes import line_keras_env, with_trainexec_estimator

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = os.path.join(ROOT, "tests", "estimator_programs", "r1_mnist.py")
TF215_PYTHON = os.environ.get("TRAINEXEC_TF215_PYTHON") or (
    sys.executable if importlib.util.find_spec("tensorflow_estimator") else None)
CURRENT_LINE = tuple(int(p) for p in tf.__version__.split(".")[:2]) >= (2, 16)
# 2,000 images in batches of 100: 20 steps an epoch. Measured on this machine, 2026-11-29:
# the first evaluation's loss 0.44-0.58, the second's 0.012-0.016, accuracy 1.0 both times
# (the drawn strokes are easy to tell apart), on both engines and under both Kerases.
FIRST_LOSS_AT_MOST = 1.2
LAST_LOSS_AT_MOST = 0.1


def start(python, program, model_dir, result_file, legacy_keras):
    return subprocess.Popen(
        [python, program, "--distribution_strategy", "mirrored", "--model_dir", model_dir,
         "--train_epochs", "2", "--result_file", result_file],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=line_keras_env(legacy_keras))


@pytest.mark.skipif(TF215_PYTHON is None, reason="TRAINEXEC_TF215_PYTHON is not set: "
                    "./scripts/test.sh sets it to the TensorFlow 2.15 environment's python")
@pytest.mark.full_lines  # run 3: test_estimator_engine_strategy_parity, MirroredStrategy
def test_r1_mnist_with_a_mirrored_strategy_trains_and_evaluates_as_on_tf_estimator(tmp_path):
    changed = with_trainexec_estimator(PROGRAM, tmp_path)
    runs = {"tf.estimator 2.15": (TF215_PYTHON, PROGRAM, False),
            f"trainexec.estimator {tf.__version__}": (sys.executable, changed, False)}
    if CURRENT_LINE and importlib.util.find_spec("tf_keras"):
        runs[f"trainexec.estimator {tf.__version__}, tf_keras"] = (
            sys.executable, changed, True)
    jobs = {}
    for i, (name, (python, program, legacy)) in enumerate(runs.items()):
        jobs[name] = (start(python, program, str(tmp_path / f"model{i}"),
                            str(tmp_path / f"result{i}.json"), legacy),
                      tmp_path / f"result{i}.json")
    results = {}
    for name, (job, result_file) in jobs.items():
        try:
            output, _ = job.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            job.kill()
            output, _ = job.communicate()
            pytest.fail(f"{name}: no end in 600 s\n{output[-3000:]}")
        assert job.returncode == 0, f"{name}\n{output[-4000:]}"
        assert "Evaluation results:" in output
        results[name] = json.loads(result_file.read_text())
    print(json.dumps(results, indent=1))
    for name, result in results.items():
        assert result["strategy"] == "MirroredStrategy", name
        first, last = result["evaluations"]
        assert (first["global_step"], last["global_step"]) == (20, 40), name
        assert first["loss"] < FIRST_LOSS_AT_MOST and last["loss"] < LAST_LOSS_AT_MOST, (
            name, result)
        assert last["loss"] < first["loss"] and last["accuracy"] >= 0.95, (name, result)
    assert results["tf.estimator 2.15"]["estimator"].startswith("tensorflow_estimator")
    assert all(r["estimator"] == "trainexec.estimator"
               for n, r in results.items() if n.startswith("trainexec"))
