"""Canned-estimator checkpoints cross lines both ways: a tf.estimator 2.15
`DNNClassifier`, `LinearClassifier` and `DNNLinearCombinedClassifier` program, with its
one import changed to trainexec.estimator, evaluates tf.estimator's checkpoint on this
line to the same metrics (1e-5) and predictions, resumes it to the variables tf.estimator
reaches, and what it writes tf.estimator 2.15 reads back to the same metrics. The 2.15
side runs in its own virtual environment (`TRAINEXEC_TF215_PYTHON`, which
./scripts/test.sh sets)."""

import os
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf

from processes import with_trainexec_estimator
from test_estimator_engine_cross_line import TF215_PYTHON, run

# untimed: nothing here is timed (generous timeouts only): runs beside the cluster tests
pytestmark = [pytest.mark.cluster, pytest.mark.tf_line, pytest.mark.untimed]

PROGRAM = os.path.join(os.path.dirname(os.path.dirname(__file__)), "estimator_programs",
                       "canned_estimators.py")


KINDS = ("dnn", "linear", "wide_deep")


def _run(python, program, model_dir, steps, out):
    """The program on `python`, every kind in one process (each in model_dir/KIND)."""
    return run(python, program, model_dir, steps, out, first=[",".join(KINDS)])


def _same_metrics(got, expected, kind):
    assert set(got) == set(expected), kind
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-5), f"{kind}: {key}"


@pytest.mark.skipif(not TF215_PYTHON, reason="TRAINEXEC_TF215_PYTHON is not set: "
                    "./scripts/test.sh sets it to the TensorFlow 2.15 environment's python")
def test_canned_checkpoints_cross_lines_both_ways(tmp_path):
    """Each of DNNClassifier, LinearClassifier and DNNLinearCombinedClassifier (the
    kinds run one after another in each process: a process per step, not per kind)."""
    changed = with_trainexec_estimator(PROGRAM, tmp_path)
    theirs_dir, ours_dir = str(tmp_path / "theirs"), str(tmp_path / "ours")
    theirs = _run(TF215_PYTHON, PROGRAM, theirs_dir, 20, str(tmp_path / "t1.json"))
    assert theirs["tensorflow"].startswith("2.15")
    # tf.estimator's checkpoints, read here: the same numbers
    shutil.copytree(theirs_dir, ours_dir)
    ours = _run(sys.executable, changed, ours_dir, 20, str(tmp_path / "o1.json"))
    assert ours["estimator"] == "trainexec.estimator" and ours["tensorflow"] == tf.__version__
    for kind in KINDS:
        assert theirs[kind]["metrics"]["global_step"] == 20, kind
        _same_metrics(ours[kind]["metrics"], theirs[kind]["metrics"], kind)
        np.testing.assert_allclose(ours[kind]["probabilities"], theirs[kind]["probabilities"],
                                   atol=1e-5, err_msg=kind)
    # resumed on both lines: the same variables, optimizer slots included
    theirs = _run(TF215_PYTHON, PROGRAM, theirs_dir, 30, str(tmp_path / "t2.json"))
    ours = _run(sys.executable, changed, ours_dir, 30, str(tmp_path / "o2.json"))
    for kind in KINDS:
        assert ours[kind]["metrics"]["global_step"] == 30, kind
        assert theirs[kind]["metrics"]["global_step"] == 30, kind
        assert set(ours[kind]["variables"]) == set(theirs[kind]["variables"]), kind
        for name, value in theirs[kind]["variables"].items():
            np.testing.assert_allclose(ours[kind]["variables"][name], value, atol=1e-5,
                                       err_msg=f"{kind}: {name}")
    # what trainexec wrote, read by tf.estimator 2.15: the same numbers
    back_dir = str(tmp_path / "back")
    shutil.copytree(ours_dir, back_dir)
    back = _run(TF215_PYTHON, PROGRAM, back_dir, 30, str(tmp_path / "b.json"))
    for kind in KINDS:
        _same_metrics(back[kind]["metrics"], ours[kind]["metrics"], kind)
