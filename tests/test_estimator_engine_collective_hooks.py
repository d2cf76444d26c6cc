"""The saving hooks every MultiWorkerMirroredStrategy task runs
(`trainexec.estimator_engine.collective_hooks`), run in a real session: the chief saves
the run's checkpoints (its listeners told), another task the same steps into its own
scratch directory; time-based saving becomes step-based; listeners where they cannot be
honoured are refused, naming the fix."""

import json
import logging
import os

import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.estimator_engine.collective_hooks import (STEPS_INSTEAD_OF_SECS,
                                                         collective_hooks, scratch_dir)

pytestmark = pytest.mark.tf_line

CLUSTER = {"chief": ["h0:1"], "worker": ["h1:1"]}


def config_of(monkeypatch, task_type, **fields):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": CLUSTER, "task": {"type": task_type, "index": 0}}))
    return te.RunConfig(save_summary_steps=None, log_step_count_steps=None, **fields)


class Saves(tf.compat.v1.train.CheckpointSaverListener):
    def __init__(self):
        self.steps = []

    def after_save(self, session, global_step_value):
        self.steps.append(global_step_value)


def train(model_dir, config, steps, listeners=()):
    """`steps` steps of a model of one variable, with the task's collective hooks."""
    with tf.Graph().as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        tf.compat.v1.get_variable("w", [1])
        increment = tf.compat.v1.assign_add(step, 1)
        scaffold = tf.compat.v1.train.Scaffold()
        hooks = collective_hooks(config, str(model_dir), scaffold, [], [], listeners)
        creator = tf.compat.v1.train.ChiefSessionCreator(scaffold=scaffold)
        with tf.compat.v1.train.MonitoredSession(creator, hooks=hooks) as session:
            for _ in range(steps):
                session.run(increment)


def test_the_chief_saves_the_run_and_a_worker_the_same_steps_apart(tmp_path, monkeypatch):
    listener = Saves()
    chief = config_of(monkeypatch, "chief", save_checkpoints_steps=2)
    train(tmp_path, chief, 4, [listener])
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-4")
    assert listener.steps == [0, 2, 4]
    worker = config_of(monkeypatch, "worker", save_checkpoints_steps=2)
    train(tmp_path / "w", worker, 4)
    scratch = scratch_dir(str(tmp_path / "w"), worker)
    assert scratch == os.path.join(str(tmp_path / "w"), "tmp_worker_0")
    assert tf.train.latest_checkpoint(scratch).endswith("model.ckpt-4")
    assert tf.train.latest_checkpoint(str(tmp_path / "w")) is None


def test_saving_by_time_becomes_saving_by_steps_with_a_warning(tmp_path, monkeypatch,
                                                              caplog):
    config = config_of(monkeypatch, "chief", save_checkpoints_secs=1)
    with caplog.at_level(logging.WARNING):
        train(tmp_path, config, 3)
    assert f"setting `save_checkpoint_steps` to {STEPS_INSTEAD_OF_SECS}" in caplog.text
    # Step 0 and the last step only: no save every second of the run.
    saved = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
    assert [os.path.basename(path) for path in saved] == ["model.ckpt-0", "model.ckpt-3"]


@pytest.mark.parametrize("task_type, fields, words", [
    ("worker", dict(save_checkpoints_steps=2), "saving_listeners are given to a task that "
     "does not save the run's checkpoints: give them to the chief's Estimator.train"),
    ("chief", dict(save_checkpoints_steps=None, save_checkpoints_secs=None),
     "checkpoints are off .*: set save_checkpoints_steps"),
], ids=["on-a-worker", "checkpoints-off"])
def test_listeners_that_cannot_be_honoured_are_refused(tmp_path, monkeypatch, task_type,
                                                       fields, words):
    config = config_of(monkeypatch, task_type, **fields)
    with pytest.raises(ValueError, match=words):
        train(tmp_path, config, 1, [Saves()])
    assert os.listdir(tmp_path) == []

