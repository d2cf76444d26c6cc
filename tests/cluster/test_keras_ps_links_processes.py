"""trainexec/keras/ps_links.py against a real ParameterServerStrategy cluster
(tests/keras_programs/ps_links.py: the worker and the ps are processes of their
own, the program is the chief): the worker's calls really reach the ps, and a ps
that is gone is retried, then given up on within the time limit."""

import json
import os
import subprocess
import sys

import pytest

from processes import ROOT, child_env

pytestmark = [pytest.mark.cluster, pytest.mark.keras]

PROGRAM = os.path.join(ROOT, "tests", "keras_programs", "ps_links.py")
WORKER = "/job:worker/replica:0/task:0"


def test_the_worker_reaches_the_ps_and_a_killed_ps_is_given_up_on_in_time():
    done = subprocess.run([sys.executable, PROGRAM], env=child_env(), timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(device.startswith("/job:ps/") for device in report["devices"]), report
    assert report["workers"] == [WORKER]
    up, gone = report["up"][WORKER], report["gone"][WORKER]
    assert up["reached"] is True and up["attempts"] == 1, report
    # The ps is gone for good: each read fails as Unavailable from /job:ps, which is
    # retried every 0.2 s until the 2 s limit.
    assert gone["reached"] is False and gone["attempts"] >= 5, report
    assert 1.0 <= gone["secs"] < 2.0, report
    assert "did not reach every parameter server within 2s" in done.stderr
