"""The Python examples of README.md and of the docs site (docs/**/*.md) and their
stand-ins, for tests/test_readme.py and tests/cluster/test_readme_*.py.

Each ```python block in those files is preceded by `<!-- readme-example: GROUP -->`
(it runs) or `<!-- illustrative: REASON -->` (it does not, and REASON says why).
The blocks of a group live in one file and run in order in one namespace
(`run_group`), which starts with small stand-ins for what the text calls the user's
own (model, data, directories, input functions): `STAND_INS`, one entry per group.
"""

import os
import pathlib
import re
import sys

from sidecar_programs import toy

__all__ = ["DOCS", "ILLUSTRATIVE", "MARKED", "README", "STAND_INS", "blocks", "documents",
           "group_files", "run_group"]

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKED = re.compile(r"<!-- readme-example: ([\w-]+) -->\n```python\n(.*?)```", re.S)
ILLUSTRATIVE = re.compile(r"<!-- illustrative: (.*?) -->\n```python\n", re.S)


def documents():
    """README.md, then every Markdown page of the docs site, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def group_files():
    """{group: the files its blocks are in} (each group should be in one)."""
    files = {}
    for path in documents():
        for group, _ in MARKED.findall(path.read_text()):
            files.setdefault(group, set()).add(path.relative_to(ROOT).as_posix())
    return files


def blocks():
    """(the README's text, {group: [code, ...]}) over README.md and docs/**/*.md."""
    groups = {}
    for path in documents():
        for group, code in MARKED.findall(path.read_text()):
            groups.setdefault(group, []).append(code)
    return README.read_text(), groups


def estimator_stand_ins(tmp_path):
    import tensorflow as tf
    from trainexec.examples import estimator_job

    return dict(model_dir=str(tmp_path / "run"),
                feature_columns=[tf.feature_column.numeric_column(
                    "x", shape=(estimator_job.FEATURES,))],
                train_input_fn=estimator_job._train_input_fn,
                eval_input_fn=estimator_job._eval_input_fn,
                serving_fn=estimator_job.serving_input_receiver_fn)


def native_estimator_stand_ins(tmp_path):
    from trainexec.examples import estimator_job

    return dict(model_dir=str(tmp_path / "run"), train_input_fn=estimator_job._train_input_fn,
                eval_input_fn=estimator_job._eval_input_fn,
                serving_input_receiver_fn=lambda: estimator_job.serving_input_receiver_fn(
                    "native"))


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


def chaos_stand_ins(tmp_path, monkeypatch):
    # The README's train.py in the current directory (the pods run "train.py" from
    # it); `workdir`: where the runs keep their files.
    from doc_commands import program_text

    (tmp_path / "train.py").write_text(program_text("train.py"))
    monkeypatch.chdir(tmp_path)
    return dict(workdir=str(tmp_path / "chaos"))


def quickstart_stand_ins(tmp_path, monkeypatch):
    # The README's train.py is a whole program: nothing stands in but its argument.
    monkeypatch.setattr(sys, "argv", ["train.py", "--model-dir", str(tmp_path / "quickstart")])
    return {}


def pytest_fixture_stand_ins(tmp_path, monkeypatch):
    # The block is a test module: tests/cluster/test_readme_launch.py runs it with
    # pytest, beside the program it names (the README's train.py); nothing stands in.
    return {}


STAND_INS = {"quickstart": quickstart_stand_ins, "pytest-fixture": pytest_fixture_stand_ins,
             "estimator": estimator_stand_ins, "native-estimator": native_estimator_stand_ins,
             "numpy-inputs": lambda tmp_path: dict(model_dir=str(tmp_path / "run")),
             "heads": lambda tmp_path: dict(model_dir=str(tmp_path / "heads")),
             "canned": lambda tmp_path: dict(model_dir=str(tmp_path / "canned")),
             "keras": keras_stand_ins,
             "keras-trainer": keras_trainer_stand_ins, "hand-written": hand_written_stand_ins,
             "custom-loop": custom_loop_stand_ins, "launch": launch_stand_ins,
             "multihost": multihost_stand_ins, "chaos": chaos_stand_ins}


NEEDS_MONKEYPATCH = {"launch", "quickstart", "pytest-fixture", "chaos"}


def run_group(group, tmp_path, monkeypatch):
    make = STAND_INS[group]
    namespace = (make(tmp_path, monkeypatch) if group in NEEDS_MONKEYPATCH else make(tmp_path))
    for code in blocks()[1][group]:
        exec(compile(code, f"{'|'.join(sorted(group_files()[group]))}[{group}]", "exec"),
             namespace)
    return namespace
