"""trainexec/cli/installation.py: what this installation can train, and `trainexec
tfconfig` saying so beside the cluster shape's verdicts."""

import os
import subprocess
import sys

import pytest

from tf_lines import has_estimator
from trainexec.cli.installation import Installation

pytestmark = pytest.mark.tf_line

PS_CLUSTER = ('{"cluster": {"chief": ["h:1"], "worker": ["h:2"], "ps": ["h:3"]}, '
              '"task": {"type": "worker", "index": 0}}')


def _detect(tensorflow, estimator=False, tf_keras=False, legacy=None):
    environ = {} if legacy is None else {"TF_USE_LEGACY_KERAS": legacy}
    return Installation.detect(environ, version_of=lambda names: tensorflow,
                               installed={"tensorflow_estimator": estimator,
                                          "tf_keras": tf_keras}.get)


@pytest.mark.parametrize("installation, estimator, keras", [
    pytest.param(_detect("2.15.1", estimator=True), None, None, id="2.15 + estimator"),
    pytest.param(_detect("2.15.1"), "tensorflow-estimator is not installed", None,
                 id="2.15 without estimator"),
    pytest.param(_detect("2.21.0", tf_keras=True), "2.21.0 has no tf.estimator",
                 None, id="2.21, Keras 3 trains clusters too"),
    pytest.param(_detect("2.21.0", tf_keras=True, legacy="1"),
                 "2.21.0 has no tf.estimator", None, id="2.21, tf_keras selected"),
    pytest.param(_detect("2.21.0", legacy="1"), "2.21.0 has no tf.estimator",
                 'pip install "trainexec[tf-keras]"', id="2.21, selected, not installed"),
    pytest.param(_detect("2.16.0rc0", legacy="yes"), "2.16.0rc0 has no tf.estimator", None,
                 id="only 1, true and True select it, as in TensorFlow"),
    pytest.param(_detect(None), "TensorFlow is not installed",
                 "TensorFlow is not installed", id="no TensorFlow"),
])
def test_notes(installation, estimator, keras):
    notes = installation.notes()
    assert (estimator is None) == ("Estimator" not in notes), notes
    assert (keras is None) == ("Keras" not in notes), notes
    assert estimator is None or estimator in notes["Estimator"]
    assert keras is None or keras in notes["Keras"]


def test_tfconfig_says_what_this_installation_cannot_run():
    env = dict(os.environ, TF_CONFIG=PS_CLUSTER)  # TF_USE_LEGACY_KERAS as in this process
    done = subprocess.run([sys.executable, "-m", "trainexec", "tfconfig"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "  Keras: yes, ParameterServerStrategy" in done.stdout  # the shape's verdict
    assert "  Keras: not here" not in done.stdout  # Keras 3 and tf_keras train clusters
    assert ("  Estimator: not here" in done.stdout) == (not has_estimator())
