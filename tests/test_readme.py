"""The Python examples of README.md and docs/**/*.md run as written
(tests/readme_examples.py finds and runs them). A block with neither a
`readme-example` nor an `illustrative` marker fails the test, so none is forgotten.
The examples that start real processes (`launch`, `pytest-fixture`, the quick
start's `trainexec launch`, `multihost`, `chaos`) are in tests/cluster/test_readme_*.py.
"""

import os
import re

import pytest

from readme_examples import (ILLUSTRATIVE, MARKED, ROOT, STAND_INS, blocks, documents,
                             group_files, run_group)
from sidecar_programs import toy

pytestmark = pytest.mark.tf_line


@pytest.mark.parametrize("path", documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_python_block_runs_or_says_why_not(path):
    text = path.read_text()
    reasons = ILLUSTRATIVE.findall(text)
    python_blocks = len(re.findall(r"^```py(?:thon)?\b", text, re.M))
    assert python_blocks == len(MARKED.findall(text)) + len(reasons), (
        f"{path.name}: a ```python block without `<!-- readme-example: GROUP -->` (a test "
        "runs it) or `<!-- illustrative: REASON -->` right above it")
    assert all(reason.strip() for reason in reasons), "an illustrative block must say why"


def test_every_example_group_has_stand_ins_and_one_file():
    groups = blocks()[1]
    assert set(groups) == set(STAND_INS)
    assert {group: len(files) for group, files in group_files().items()} == {
        group: 1 for group in groups}


def test_readme_is_short_and_shows_the_repository_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert "./scripts/demo.sh" in text and "./scripts/test.sh" in text


@pytest.mark.keras
def test_quickstart_program(tmp_path, monkeypatch, no_tf_config):
    ns = run_group("quickstart", tmp_path, monkeypatch)
    assert ns["result"].metrics["global_step"] == 300 and ns["result"].exports == []
    assert ns["result"].metrics["accuracy"] > 0.9  # a linearly separable label
    assert os.path.isdir(os.path.join(ns["model_dir"], "eval"))


@pytest.mark.estimator
def test_estimator_examples(tmp_path, monkeypatch, no_tf_config):
    ns = run_group("estimator", tmp_path, monkeypatch)
    metrics = ns["result"].metrics
    assert metrics["global_step"] >= 1000 and metrics["accuracy"] > 0.5  # 3 classes: 1/3 by chance
    [export] = ns["result"].exports
    export = os.fsdecode(export)  # tf.estimator returns bytes
    assert os.path.isdir(export) and "saved_model.pb" in os.listdir(export)


@pytest.mark.keras  # tf.compat.v1.layers: Keras 2 (line 2, and TF 2.15 on line 3)
def test_native_estimator_example(tmp_path, monkeypatch, no_tf_config):
    from trainexec.keras.strategy import is_keras_3

    if is_keras_3():
        pytest.skip("the page's model_fn uses tf.compat.v1.layers, Keras 2 layers: it runs "
                    "with tf_keras (TF_USE_LEGACY_KERAS=1, test line 2) and on TF 2.15")
    ns = run_group("native-estimator", tmp_path, monkeypatch)
    metrics = ns["result"].metrics
    assert metrics["global_step"] == 1000 and metrics["accuracy"] > 0.8  # 3 separated blobs
    [export] = ns["result"].exports
    export = os.fsdecode(export)
    assert export.startswith(os.path.join(ns["model_dir"], "export", "final"))
    assert "saved_model.pb" in os.listdir(export)


@pytest.mark.keras  # tf.keras layers without names: Keras 3 and Keras 2 alike
def test_numpy_inputs_example(tmp_path, monkeypatch, no_tf_config):
    ns = run_group("numpy-inputs", tmp_path, monkeypatch)
    assert ns["metrics"]["global_step"] == 300 and ns["metrics"]["accuracy"] > 0.8
    assert len(ns["predicted"]) == 5


def test_heads_example(tmp_path, monkeypatch, no_tf_config):
    ns = run_group("heads", tmp_path, monkeypatch)  # plain ops: every line alike
    assert ns["metrics"]["global_step"] == 100 and ns["metrics"]["auc"] > 0.9
    assert 0.0 < ns["metrics"]["precision/positive_threshold_0.3"] <= 1.0


def test_canned_example(tmp_path, monkeypatch, no_tf_config):
    import tensorflow as tf

    ns = run_group("canned", tmp_path, monkeypatch)  # no Keras layers: every line alike
    assert ns["metrics"]["global_step"] == 1000 and ns["metrics"]["accuracy"] > 0.8
    names = {name for name, _ in tf.train.list_variables(ns["model_dir"])}
    assert {"dnn/hiddenlayer_1/kernel", "linear/linear_model/city/weights"} <= names


@pytest.mark.keras
def test_keras_examples(tmp_path, monkeypatch):
    ns = run_group("keras", tmp_path, monkeypatch)
    steps = 3 * 8  # 3 epochs of 256 examples in batches of 32
    assert ns["metrics"]["global_step"] == steps
    fresh = toy.build_model()
    fresh.load_weights(os.path.join(ns["ckpt_dir"], "ckpt-3.weights.h5"))
    expected = fresh.evaluate(toy.dataset(seed=1), verbose=0, return_dict=True)["loss"]
    assert ns["metrics"]["loss"] == pytest.approx(expected, rel=1e-5)
    assert ns["predictions"].shape == (5, 1)
    assert os.path.isdir(os.path.join(ns["log_dir"], "validation"))


@pytest.mark.keras
def test_custom_loop_example(tmp_path, monkeypatch):
    from trainexec import read_training_complete

    ns = run_group("custom-loop", tmp_path, monkeypatch)
    record = read_training_complete(ns["ckpt_dir"])
    assert record.checkpoint == ns["manager"].latest_checkpoint
    assert record.checkpoint.endswith("ckpt-3") and record.global_step == 3 * 8


@pytest.mark.keras
def test_keras_trainer_example(tmp_path, monkeypatch, no_tf_config):
    ns = run_group("keras-trainer", tmp_path, monkeypatch)
    assert ns["result"].metrics["global_step"] == 200 and ns["result"].exports == []
    import tensorflow as tf

    fresh = toy.build_model()
    tf.train.Checkpoint(model=fresh).read(
        os.path.join(ns["model_dir"], "ckpt-200")).expect_partial()
    expected = fresh.evaluate(toy.dataset(seed=1), verbose=0, return_dict=True)["loss"]
    assert ns["result"].metrics["loss"] == pytest.approx(expected, rel=1e-5)


@pytest.mark.keras
def test_hand_written_loop_example(tmp_path, monkeypatch, no_tf_config):
    from trainexec import read_training_complete

    ns = run_group("hand-written", tmp_path, monkeypatch)
    assert ns["plan"].is_chief  # no TF_CONFIG: a local run, its own chief
    record = read_training_complete(ns["ckpt_dir"])
    assert record.checkpoint == ns["manager"].latest_checkpoint
    assert record.checkpoint.endswith("ckpt-3") and record.global_step == 3 * 8
