"""trainexec/keras/evaluate/sidecar.py's SidecarEvaluator live, on the real clock, against a
training child process (tests/sidecar_programs): it waits for an HDF5 file its writer still
holds open, and follows `fit` or a custom loop to the end, stopping by itself after training.
On checkpoints written in this process, with a fake clock, it is
tests/test_keras_evaluate_sidecar.py.
"""

import json
import logging
import os
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from processes import ROOT
from sidecar_programs import toy
from sidecars import STEPS_PER_EPOCH, metrics_log, names, sidecar

PROGRAMS = os.path.join(ROOT, "tests", "sidecar_programs")

pytestmark = [pytest.mark.tf_line, pytest.mark.cluster, pytest.mark.keras]


def test_hdf5_file_held_open_by_its_writer_is_waited_for(tmp_path, caplog):
    checkpoint_dir = tmp_path / "ckpts"
    checkpoint_dir.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    child = subprocess.Popen([sys.executable, os.path.join(PROGRAMS, "slow_h5_writer.py"),
                              str(checkpoint_dir), "4"], env=env, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().startswith("written")  # the file is there, open
        starts = []

        class Starts(tf.keras.callbacks.Callback):
            def on_test_begin(self, logs=None):
                starts.append(time.time())
        with caplog.at_level(logging.INFO):
            metrics = sidecar(checkpoint_dir, clock=None, poll_secs=0.2,
                              idle_timeout_secs=60, callbacks=[Starts()]).start()
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
    closed_at = float((checkpoint_dir / "ckpt-1.weights.h5.closed_at").read_text())
    assert len(starts) == 1 and starts[0] >= closed_at
    assert metrics["global_step"] == 8
    assert any("still being written" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("program", [
    # The weights file's writer is also met, held open, by the test above.
    pytest.param(["fit_job.py", "weights.h5"], id="fit-weights.h5",
                 marks=pytest.mark.full_suite(covered_by=(
                     "test_hdf5_file_held_open_by_its_writer_is_waited_for (a fit job's "
                     ".weights.h5 evaluated), and the fit-keras row (followed to its end)"))),
    pytest.param(["fit_job.py", "keras"], id="fit-keras"),
    pytest.param(["custom_loop_job.py"], id="custom-loop-manager")])
def test_live_evaluator_stops_by_itself_after_training(tmp_path, program):
    checkpoint_dir = str(tmp_path / "ckpts")
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    child = subprocess.Popen([sys.executable, os.path.join(PROGRAMS, program[0]),
                              checkpoint_dir, "4", "1.0", *program[1:]], env=env)
    try:
        started = time.monotonic()
        evaluator = sidecar(checkpoint_dir, clock=None, poll_secs=0.2,
                            idle_timeout_secs=120)  # the timeout only guards a hang
        metrics = evaluator.start()
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
    assert time.monotonic() - started < 120
    assert "last checkpoint" in evaluator.stop_reason
    lines = metrics_log(checkpoint_dir)
    assert names(lines)[-1] == "ckpt-4" and len(set(names(lines))) == len(lines)
    assert len(lines) >= 2, names(lines)  # it followed training, not just its end
    assert metrics["global_step"] == 4 * STEPS_PER_EPOCH == lines[-1]["step"]
    with open(os.path.join(checkpoint_dir, toy.TRAINER_METRICS)) as f:
        trainer_metrics = json.load(f)
    assert {k: metrics[k] for k in trainer_metrics} == pytest.approx(trainer_metrics,
                                                                     rel=1e-5)
