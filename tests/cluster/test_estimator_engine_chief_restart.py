"""A restarted trainexec.estimator chief does not throw away the cluster's progress
(issue 36): where the ps kept serving and the workers trained past the chief's latest
checkpoint, or finished the run, the chief carries on from the ps' state instead of
restoring the checkpoint over it (tf.estimator restores, rolling the global step back:
seeds 19, 29 and 30 of the issue re-trained up to 9,800 steps alone).

tests/estimator_programs/chief_restart.py runs the cluster (a ps and a chief server) in
one process."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = os.path.join(ROOT, "tests", "estimator_programs", "chief_restart.py")


def _restart(tmp_path, ahead, max_steps):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    done = subprocess.run([sys.executable, PROGRAM, str(tmp_path), str(ahead),
                           str(max_steps)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.parametrize("ahead, steps_run", [
    (15, 5),   # the workers trained on from step 10 to 15: the chief adds the last 5
    (20, 0),   # the workers finished the run: nothing left to train
])
def test_a_restarted_chief_carries_on_from_the_cluster(tmp_path, ahead, steps_run):
    result, log = _restart(tmp_path, ahead, max_steps=20)
    assert result["steps_run"] == steps_run
    assert result["cluster_step"] == 20
    assert result["latest"].endswith("model.ckpt-20")  # saved from the cluster's state
    assert "past the latest checkpoint (step 10): the chief carries on" in log
