"""The README's Python examples and their stand-ins, for tests/test_readme.py and
tests/cluster/test_readme_launch.py.

Each ```python block in README.md is preceded by `<!-- readme-example: GROUP -->`.
The blocks of a group run in order in one namespace (`run_group`), which starts with
small stand-ins for what the README calls the user's own (model, data, directories,
input functions): `STAND_INS`, one entry per group.
"""

import os
import pathlib
import re
import sys

from sidecar_programs import toy

__all__ = ["MARKED", "README", "STAND_INS", "blocks", "run_group"]

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
MARKED = re.compile(r"<!-- readme-example: ([\w-]+) -->\n```python\n(.*?)```", re.S)


def blocks():
    text = README.read_text()
    groups = {}
    for group, code in MARKED.findall(text):
        groups.setdefault(group, []).append(code)
    return text, groups


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


def multihost_stand_ins(tmp_path):
    # `program`: plays any role of a TFJob: the chief says it saved, every pod ends
    # by itself a little later (a killed one again, once restarted).
    program = tmp_path / "my_program.py"
    program.write_text(
        "import json, os, sys, time\n"
        "task = json.loads(os.environ['TF_CONFIG'])['task']\n"
        "if task['type'] == 'chief':\n"
        "    print('Saved checkpoint ckpt-1', flush=True)\n"
        "time.sleep(3)\n")
    return dict(program=str(program), model_dir=str(tmp_path / "run"))


STAND_INS = {"estimator": estimator_stand_ins, "keras": keras_stand_ins,
             "keras-trainer": keras_trainer_stand_ins, "hand-written": hand_written_stand_ins,
             "custom-loop": custom_loop_stand_ins, "launch": launch_stand_ins,
             "multihost": multihost_stand_ins}


def run_group(group, tmp_path, monkeypatch):
    make = STAND_INS[group]
    namespace = (make(tmp_path, monkeypatch) if group == "launch" else make(tmp_path))
    for code in blocks()[1][group]:
        exec(compile(code, f"README.md[{group}]", "exec"), namespace)
    return namespace
