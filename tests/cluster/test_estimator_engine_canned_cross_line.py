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

from test_estimator_engine_cross_line import OURS, THEIRS, TF215_PYTHON, run

pytestmark = [pytest.mark.cluster, pytest.mark.tf_line]

PROGRAM = os.path.join(os.path.dirname(os.path.dirname(__file__)), "estimator_programs",
                       "canned_estimators.py")


def _run(python, program, kind, model_dir, steps, out):
    return run(python, program, model_dir, steps, out, first=[kind])


def _same_metrics(got, expected):
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-5), key


@pytest.mark.skipif(not TF215_PYTHON, reason="TRAINEXEC_TF215_PYTHON is not set: "
                    "./scripts/test.sh sets it to the TensorFlow 2.15 environment's python")
@pytest.mark.parametrize("kind", ["dnn", "linear", "wide_deep"])
def test_canned_checkpoints_cross_lines_both_ways(tmp_path, kind):
    source = open(PROGRAM).read()
    assert source.count(THEIRS) == 1
    changed = tmp_path / "canned_estimators.py"
    changed.write_text(source.replace(THEIRS, OURS))
    theirs_dir, ours_dir = str(tmp_path / "theirs"), str(tmp_path / "ours")
    theirs = _run(TF215_PYTHON, PROGRAM, kind, theirs_dir, 20, str(tmp_path / "t1.json"))
    assert theirs["tensorflow"].startswith("2.15") and theirs["metrics"]["global_step"] == 20
    # tf.estimator's checkpoint, read here: the same numbers
    shutil.copytree(theirs_dir, ours_dir)
    ours = _run(sys.executable, str(changed), kind, ours_dir, 20, str(tmp_path / "o1.json"))
    assert ours["estimator"] == "trainexec.estimator" and ours["tensorflow"] == tf.__version__
    _same_metrics(ours["metrics"], theirs["metrics"])
    np.testing.assert_allclose(ours["probabilities"], theirs["probabilities"], atol=1e-5)
    # resumed on both lines: the same variables, optimizer slots included
    theirs = _run(TF215_PYTHON, PROGRAM, kind, theirs_dir, 30, str(tmp_path / "t2.json"))
    ours = _run(sys.executable, str(changed), kind, ours_dir, 30, str(tmp_path / "o2.json"))
    assert ours["metrics"]["global_step"] == theirs["metrics"]["global_step"] == 30
    assert set(ours["variables"]) == set(theirs["variables"])
    for name, value in theirs["variables"].items():
        np.testing.assert_allclose(ours["variables"][name], value, atol=1e-5,
                                   err_msg=name)
    # what trainexec wrote, read by tf.estimator 2.15: the same numbers
    back_dir = str(tmp_path / "back")
    shutil.copytree(ours_dir, back_dir)
    back = _run(TF215_PYTHON, PROGRAM, kind, back_dir, 30, str(tmp_path / "b.json"))
    _same_metrics(back["metrics"], ours["metrics"])
