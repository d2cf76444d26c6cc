"""trainexec/keras/faults/coordinator_release.py against a real ParameterServerStrategy
coordinator (tests/keras_programs/coordinator_release.py, a process of its own: the
coordinator connects that process's eager context to the cluster)."""

import json
import os
import subprocess
import sys

import pytest

from processes import ROOT, child_env

pytestmark = [pytest.mark.tf_line, pytest.mark.cluster, pytest.mark.keras]

PROGRAM = os.path.join(ROOT, "tests", "keras_programs", "coordinator_release.py")


def test_the_coordinator_threads_are_stopped_and_the_process_exits_0():
    done = subprocess.run([sys.executable, PROGRAM], env=child_env(), timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["total"] == 5.0
    assert {"WorkerClosureProcessingLoop-0", "WorkerPreemptionHandler"} <= set(
        report["before"]), report
    assert report["released"] is True and report["after"] == [], report
