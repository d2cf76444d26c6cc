"""trainexec/examples/keras_job.py, the demo's Keras job, run locally (the demo runs it
as a cluster; tests/cluster/test_keras_trainer_clusters.py covers clusters)."""

import json
import os

import pytest

from trainexec.examples import keras_job


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


def test_a_cluster_on_keras_3_fails_at_once_naming_the_fix(tmp_path, monkeypatch, capsys):
    pytest.importorskip("tensorflow")
    from trainexec.keras.strategy import is_keras_3

    if not is_keras_3():
        pytest.skip("tf.keras is Keras 2 here: the cluster would train")
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
        "task": {"type": "worker", "index": 0}}))
    assert keras_job.main(["--model-dir", str(tmp_path / "run")]) == 2
    assert "TF_USE_LEGACY_KERAS=1" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # nothing started
