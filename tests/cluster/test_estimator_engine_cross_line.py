"""A custom model_fn program written for tf.estimator 2.15, with its one import changed
to trainexec.estimator, runs on this line and gives the same numbers, from the checkpoint
tf.estimator wrote on TensorFlow 2.15 (its own virtual environment,
`TRAINEXEC_TF215_PYTHON`, which ./scripts/test.sh sets), and resumes training from it."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from processes import with_trainexec_estimator

# untimed: nothing here is timed (generous timeouts only): runs beside the cluster tests
pytestmark = [pytest.mark.cluster, pytest.mark.tf_line, pytest.mark.untimed]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = os.path.join(os.path.dirname(os.path.dirname(__file__)), "estimator_programs",
                       "custom_model_fn.py")
TF215_PYTHON = os.environ.get("TRAINEXEC_TF215_PYTHON")


def run(python, program, model_dir, max_steps, out, first=()):
    env = dict(os.environ)
    if python != sys.executable:  # the 2.15 line has Keras 2 and no tf_keras
        env.pop("TF_USE_LEGACY_KERAS", None)
    done = subprocess.run([python, program, *first, model_dir, str(max_steps), out],
                          capture_output=True, text=True, timeout=300,
                          env={**env, "TF_CPP_MIN_LOG_LEVEL": "3",
                               # this tree's trainexec, whatever the environment installed
                               "PYTHONPATH": os.pathsep.join(
                                   [ROOT, os.environ.get("PYTHONPATH", "")]).rstrip(
                                       os.pathsep)})
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out) as f:
        return json.load(f)


@pytest.mark.skipif(not TF215_PYTHON, reason="TRAINEXEC_TF215_PYTHON is not set: "
                    "./scripts/test.sh sets it to the TensorFlow 2.15 environment's python")
def test_a_tf_estimator_program_with_one_import_changed_gives_the_same_numbers(tmp_path):
    theirs = run(TF215_PYTHON, PROGRAM, str(tmp_path / "theirs"), 100,
                 str(tmp_path / "theirs.json"))
    assert theirs["tensorflow"].startswith("2.15") and theirs["global_step"] == 100
    changed = with_trainexec_estimator(PROGRAM, tmp_path)
    # The user's run goes on from tf.estimator's checkpoints, here, on this line.
    shutil.copytree(tmp_path / "theirs", tmp_path / "ours")
    ours = run(sys.executable, changed, str(tmp_path / "ours"), 150,
               str(tmp_path / "ours.json"))
    assert ours["estimator"] == "trainexec.estimator" and ours["tensorflow"] == tf.__version__
    assert ours["global_step"] == 150  # resumed at 100
    assert ours["variables"] == theirs["variables"]
    assert set(ours["metrics"]) == set(theirs["metrics"]) == {
        "accuracy", "auc", "loss", "global_step"}
    for key, value in theirs["metrics"].items():
        assert ours["metrics"][key] == pytest.approx(value, abs=1e-5), key
    np.testing.assert_allclose(ours["predicted"], theirs["predicted"], atol=1e-6)
    np.testing.assert_allclose(ours["served"], theirs["served"], atol=1e-6)
    np.testing.assert_allclose(ours["served"], ours["predicted"], atol=1e-6)
