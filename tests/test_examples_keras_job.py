"""trainexec/examples/keras_job.py, the demo's Keras job, run locally (the demo runs it
as a cluster; tests/cluster/test_keras_trainer_clusters.py covers clusters)."""

import json
import os

import pytest

from trainexec.examples import keras_job

pytestmark = pytest.mark.tf_line


@pytest.mark.keras
def test_the_demo_job_trains_evaluates_and_exports_locally(tmp_path, no_tf_config, capsys):
    result_file = tmp_path / "result.json"
    assert keras_job.main(["--model-dir", str(tmp_path / "run"), "--max-steps", "100",
                           "--result-file", str(result_file)]) == 0
    result = json.loads(result_file.read_text())
    assert result["metrics"]["global_step"] == 100
    assert result["metrics"]["accuracy"] > 0.9  # three well separated classes
    (export,) = result["exports"]
    assert export == str(tmp_path / "run" / "export" / "final" / "100")
    assert os.path.exists(os.path.join(export, "saved_model.pb"))
    assert "final metrics:" in capsys.readouterr().out
