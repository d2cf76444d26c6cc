"""The README's Python examples run as written.

Each ```python block in README.md is preceded by `<!-- readme-example: GROUP -->`.
The blocks of a group run in order in one namespace, which starts with small
stand-ins for what the README calls the user's own (model, data, directories,
input functions). A block without a marker fails the test, so none is forgotten.
"""

import os
import pathlib
import re
import sys

import pytest

from sidecar_programs import toy

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
MARKED = re.compile(r"<!-- readme-example: ([\w-]+) -->\n```python\n(.*?)```", re.S)


def blocks():
    text = README.read_text()
    groups = {}
    for group, code in MARKED.findall(text):
        groups.setdefault(group, []).append(code)
    return text, groups


def test_every_python_block_is_an_example():
    text, groups = blocks()
    assert text.count("```python") == sum(len(codes) for codes in groups.values())
    assert set(groups) == set(STAND_INS)


def estimator_stand_ins(tmp_path):
    import tensorflow as tf
    from trainexec.examples import estimator_job

    return dict(model_dir=str(tmp_path / "run"),
                feature_columns=[tf.feature_column.numeric_column(
                    "x", shape=(estimator_job.FEATURES,))],
                train_input_fn=estimator_job._train_input_fn,
                eval_input_fn=estimator_job._eval_input_fn,
                serving_fn=estimator_job.serving_input_receiver_fn)


def keras_stand_ins(tmp_path):
    return dict(model=toy.build_model(), data=toy.dataset(batch=32),
                eval_data=toy.dataset(seed=1), ckpt_dir=str(tmp_path / "ckpts"),
                log_dir=str(tmp_path / "logs"), examples=toy.arrays(5, seed=2)[0])


def custom_loop_stand_ins(tmp_path):
    import tensorflow as tf

    def train_one_epoch(model, optimizer, data):
        for x, y in data:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            variables = model.trainable_variables
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

    return dict(model=toy.build_model(compiled=False), optimizer=tf.keras.optimizers.SGD(0.05),
                data=toy.dataset(batch=32), ckpt_dir=str(tmp_path / "ckpts"),
                train_one_epoch=train_one_epoch)


def keras_trainer_stand_ins(tmp_path):
    return dict(build_model=toy.build_model, model_dir=str(tmp_path / "run"),
                train_input_fn=lambda: toy.dataset(batch=32).repeat(),
                eval_input_fn=lambda: toy.dataset(seed=1))


def hand_written_stand_ins(tmp_path):
    import tensorflow as tf

    def train_one_epoch(strategy, model, optimizer, data):
        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            variables = model.trainable_variables
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

        for x, y in strategy.experimental_distribute_dataset(data):
            strategy.run(step, args=(x, y))

    return dict(build_model=lambda: toy.build_model(compiled=False), data=toy.dataset(batch=32),
                ckpt_dir=str(tmp_path / "ckpts"), scratch_dir=str(tmp_path / "scratch"),
                train_one_epoch=train_one_epoch)


def launch_stand_ins(tmp_path, monkeypatch):
    # `my_program.py`: a program that plays any role and ends by itself.
    (tmp_path / "my_program.py").write_text(
        "import json, os\n"
        "task = json.loads(os.environ['TF_CONFIG'])['task']\n"
        "print('playing', task['type'], task['index'])\n")
    monkeypatch.chdir(tmp_path)
    # `python` in the example is this environment's.
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))
    return {}


STAND_INS = {"estimator": estimator_stand_ins, "keras": keras_stand_ins,
             "keras-trainer": keras_trainer_stand_ins, "hand-written": hand_written_stand_ins,
             "custom-loop": custom_loop_stand_ins, "launch": launch_stand_ins}


def run_group(group, tmp_path, monkeypatch):
    make = STAND_INS[group]
    namespace = (make(tmp_path, monkeypatch) if group == "launch" else make(tmp_path))
    for code in blocks()[1][group]:
        exec(compile(code, f"README.md[{group}]", "exec"), namespace)
    return namespace


@pytest.mark.estimator
def test_estimator_examples(tmp_path, monkeypatch, no_tf_config):
    ns = run_group("estimator", tmp_path, monkeypatch)
    assert ns["metrics"]["global_step"] >= 1000 and ns["metrics"]["accuracy"] > 0.5  # 3 classes: chance is 1/3
    [export] = ns["exports"]
    export = os.fsdecode(export)  # tf.estimator returns bytes
    assert os.path.isdir(export) and "saved_model.pb" in os.listdir(export)


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
    assert ns["metrics"]["global_step"] == 200 and ns["exports"] == []
    import tensorflow as tf

    fresh = toy.build_model()
    tf.train.Checkpoint(model=fresh).read(
        os.path.join(ns["model_dir"], "ckpt-200")).expect_partial()
    expected = fresh.evaluate(toy.dataset(seed=1), verbose=0, return_dict=True)["loss"]
    assert ns["metrics"]["loss"] == pytest.approx(expected, rel=1e-5)


@pytest.mark.keras
def test_hand_written_loop_example(tmp_path, monkeypatch, no_tf_config):
    from trainexec import read_training_complete

    ns = run_group("hand-written", tmp_path, monkeypatch)
    assert ns["plan"].is_chief  # no TF_CONFIG: a local run, its own chief
    record = read_training_complete(ns["ckpt_dir"])
    assert record.checkpoint == ns["manager"].latest_checkpoint
    assert record.checkpoint.endswith("ckpt-3") and record.global_step == 3 * 8


@pytest.mark.cluster
def test_launch_example(tmp_path, monkeypatch, capsys):
    run_group("launch", tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "playing ps 0" in out and "playing evaluator 0" in out
