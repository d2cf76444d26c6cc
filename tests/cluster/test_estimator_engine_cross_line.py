"""A checkpoint written by the real tf.estimator on TensorFlow 2.15 (its own virtual
environment, `TRAINEXEC_TF215_PYTHON`, which ./scripts/test.sh sets) evaluates to the
same metrics with trainexec.estimator on this line, and resumes training from its step."""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

import trainexec.estimator as te
from engine_models import eval_input_fn, make_model_fn, train_input_fn

pytestmark = pytest.mark.cluster

PROGRAM = os.path.join(os.path.dirname(os.path.dirname(__file__)), "estimator_programs",
                       "tf_estimator_run.py")
TF215_PYTHON = os.environ.get("TRAINEXEC_TF215_PYTHON")


@pytest.mark.skipif(not TF215_PYTHON, reason="TRAINEXEC_TF215_PYTHON is not set: "
                    "./scripts/test.sh sets it to the TensorFlow 2.15 environment's python")
def test_a_tf_estimator_2_15_checkpoint_evaluates_and_resumes_here(tmp_path, no_tf_config):
    model_dir = str(tmp_path / "model")
    run = subprocess.run([TF215_PYTHON, PROGRAM, model_dir, "100"], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert run.returncode == 0, run.stderr[-3000:]
    written = json.loads(run.stdout.strip().splitlines()[-1])
    assert written["tensorflow"].startswith("2.15")
    ours = te.Estimator(make_model_fn(te), config=te.RunConfig(
        model_dir=model_dir, save_checkpoints_steps=50, tf_random_seed=3),
        params={"lr": 0.05})
    got = ours.evaluate(eval_input_fn)
    assert set(got) == set(written["metrics"])
    for key, value in written["metrics"].items():
        assert float(got[key]) == pytest.approx(value, abs=1e-5), (key, tf.__version__)
    ours.train(train_input_fn, max_steps=150)  # resumes at 100
    assert ours.get_variable_value("global_step") == 150
    state = tf.train.get_checkpoint_state(model_dir)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths][-2:] == [
        "model.ckpt-100", "model.ckpt-150"]
    assert ours.evaluate(eval_input_fn)["accuracy"] >= got["accuracy"] - 0.05
