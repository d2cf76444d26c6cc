"""trainexec/keras/faults/preemption.py in one local process (no TF_CONFIG): a KerasTrainer run
that gets SIGTERM saves the step in progress, exits 143 (the preempted code) and resumes
there when run again. The same under the launcher, in clusters of processes, is
tests/cluster/test_keras_faults.py.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from processes import ROOT, wait_until
from trainexec.records.completion import read_training_complete
from trainexec.contract.exit_codes import PREEMPTED_EXIT_CODE

JOB = os.path.join(ROOT, "tests", "keras_programs", "job.py")
pytestmark = [pytest.mark.keras, pytest.mark.tf_line]


def test_a_sigtermed_local_run_saves_exits_143_and_resumes_there(tmp_path):
    """One process, no TF_CONFIG: SIGTERM stops `fit` after the step in progress,
    the run saves that step and exits 143; run again, it resumes there."""
    model_dir = str(tmp_path / "model")
    command = [sys.executable, JOB, "--model-dir", model_dir, "--max-steps", "3100",
               "--save-steps", "3000"]  # a periodic save far past any SIGTERM
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("TF_CONFIG", None)
    lines = []
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        wait_until(lambda: any("Training from step 0" in line for line in lines),
                   timeout=60, what="training to start")
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == PREEMPTED_EXIT_CODE, "".join(lines[-30:])
    finally:
        proc.kill()
        proc.wait()
    reader.join(5)
    saved = [m for m in (re.search(r"Preempted \(SIGTERM\): saved (\S+) at step (\d+)", line)
                         for line in lines) if m]
    assert len(saved) == 1, "".join(lines[-30:])
    step = int(saved[0].group(2))
    assert 0 < step < 3000 and saved[0].group(1) == os.path.join(model_dir, f"ckpt-{step}")
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"Restored {model_dir}/ckpt-{step}: training resumes at step {step}" in again.stderr
    assert read_training_complete(model_dir).global_step == 3100


def test_a_sigterm_after_the_last_epoch_check_still_saves_and_raises_at_train_end():
    """The signal can land after the preemption callback's epoch-end check but before
    `fit` returns (it stops `fit` early through `stop_training`): the run must still
    save and raise, not end as if training had finished at that step."""
    from trainexec.keras.faults.preemption import _epoch_callback

    received, stops = threading.Event(), []
    callback = _epoch_callback(received, lambda: stops.append("saved and raised"))
    callback.on_epoch_end(1)
    assert stops == []
    received.set()  # the SIGTERM, after that check
    callback.on_train_end()
    assert stops == ["saved and raised"]
