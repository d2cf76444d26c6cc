"""Keras checkpoint files on an NFS-like shared directory, written on one host and read on
another (trainexec.testing: each host its own bindfs view with NFS's caching), with no
lock across hosts (HDF5_USE_FILE_LOCKING=FALSE, as NFS sites set it): the evaluator never
evaluates a file half, and the last one always gets its final evaluation and export.

Root, bindfs and /dev/fuse only; skipped, saying why, elsewhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from finished_runs import loss_at
from sidecars import metrics_log
from trainexec.testing import storage
from trainexec.testing.netns import TestBed, unavailable
from trainexec.testing.storage import NfsCaching, SharedDir

PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "sidecar_programs")
WHY_NOT = unavailable() or storage.unavailable()
QUALITIES = (0.3, 0.6, 0.9)

pytestmark = [pytest.mark.any_line, pytest.mark.cluster, pytest.mark.multihost, pytest.mark.keras,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


def test_keras_files_written_on_another_host_are_never_evaluated_half(tmp_path):
    # Attributes cached 1 s: the reader's view of the growing file's size lags the writer.
    shared = SharedDir(str(tmp_path / "shared"),
                       caching=NfsCaching(attr_secs=1.0, entry_secs=1.0, negative_secs=1.0))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", HDF5_USE_FILE_LOCKING="FALSE",
               PYTHONPATH=os.pathsep.join([PROGRAMS, os.path.dirname(PROGRAMS)]))
    run_dir = shared.on_hosts("run")
    with TestBed(["trainer", "evaluator"], shared_dir=shared) as bed:
        os.makedirs(shared.on_machine(run_dir))
        evaluator = bed.popen("evaluator", [sys.executable, os.path.join(
            PROGRAMS, "evaluate_dir.py"), run_dir], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        writer = bed.run("trainer", [sys.executable, os.path.join(
            PROGRAMS, "chunked_h5_writer.py"), run_dir, "0.4",
            *map(str, QUALITIES)], timeout=240)
        assert writer.returncode == 0, writer.stderr[-3000:]
        out, _ = evaluator.communicate(timeout=240)
    assert evaluator.returncode == 0, out[-4000:]
    # It met a file still being written (it waited on it), and evaluated none half.
    assert "checkpoint still being written" in out, out[-4000:]
    here = shared.on_machine(run_dir)
    evaluated = metrics_log(here)
    whole = {f"ckpt-{n}.weights.h5": loss_at(q) for n, q in enumerate(QUALITIES, start=1)}
    assert evaluated, f"nothing evaluated\n{out[-3000:]}"
    for line in evaluated:  # every evaluation is of a whole file: its loss is that file's
        name = os.path.basename(line["checkpoint"])
        assert line["metrics"]["loss"] == pytest.approx(whole[name], rel=1e-5), (
            line, out[-3000:])
    assert os.path.basename(evaluated[-1]["checkpoint"]) == "ckpt-3.weights.h5"
    final = json.loads(out.strip().splitlines()[-1])
    assert final["loss"] == pytest.approx(whole["ckpt-3.weights.h5"], rel=1e-5)
    exports = os.listdir(os.path.join(here, "export", "final"))
    assert exports == ["24"], exports  # the last checkpoint's step, once
    assert os.path.exists(os.path.join(here, "export", "final", "24", "saved_model.pb"))
