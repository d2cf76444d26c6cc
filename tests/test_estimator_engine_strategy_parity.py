"""trainexec.estimator beside the real tf.estimator (TensorFlow 2.15 line) under the same
MirroredStrategy of two replicas (two CPU devices in the session): the same model_fn,
seed and data train to the same variables, each evaluates the other's checkpoint to the
same metrics (with and without `eval_distribute`), and each resumes the other's run."""

import shutil

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from engine_models import data, eval_input_fn, make_model_fn

pytestmark = [pytest.mark.estimator, pytest.mark.tf_line]

TWO_CPUS = ["/device:CPU:0", "/device:CPU:1"]
VARIABLES = ("hidden/kernel", "hidden/bias", "logits/kernel", "logits/bias")


def per_replica_input_fn():
    x, y = data(512, 1)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(16)


def make(api, model_dir, train=True, evaluate=False):
    """`api`'s Estimator (tf.estimator or trainexec.estimator) of one model_fn, trained
    (`train`) and evaluated (`evaluate`) with two replicas."""
    config = api.RunConfig(
        model_dir=str(model_dir), save_checkpoints_steps=20, tf_random_seed=3,
        session_config=tf.compat.v1.ConfigProto(allow_soft_placement=True,
                                                device_count={"CPU": 2}),
        train_distribute=tf.distribute.MirroredStrategy(TWO_CPUS) if train else None,
        eval_distribute=tf.distribute.MirroredStrategy(TWO_CPUS) if evaluate else None)
    return api.Estimator(make_model_fn(api), config=config, params={"lr": 0.05})


def assert_same_metrics(got, expected):
    assert set(got) == set(expected)
    for key in expected:
        assert got[key] == pytest.approx(expected[key], abs=1e-5), key


def test_the_same_strategy_trains_to_the_same_variables(tmp_path, no_tf_config):
    theirs = make(tf.estimator, tmp_path / "theirs")
    ours = make(te, tmp_path / "ours")
    theirs.train(per_replica_input_fn, max_steps=40)
    ours.train(per_replica_input_fn, max_steps=40)
    assert ours.get_variable_names() == theirs.get_variable_names()
    assert ours.get_variable_value("global_step") == 40
    for name in VARIABLES:
        np.testing.assert_allclose(ours.get_variable_value(name),
                                   theirs.get_variable_value(name), atol=1e-5)


@pytest.mark.parametrize("evaluate", [False, True], ids=["plain", "eval_distribute"])
def test_each_evaluates_the_others_checkpoint_to_the_same_metrics(tmp_path, no_tf_config,
                                                                  evaluate):
    make(tf.estimator, tmp_path / "theirs").train(per_replica_input_fn, max_steps=40)
    make(te, tmp_path / "ours").train(per_replica_input_fn, max_steps=40)
    for trained in ("theirs", "ours"):
        checkpoint = str(tmp_path / trained / "model.ckpt-40")
        expected = make(tf.estimator, tmp_path / trained, evaluate=evaluate).evaluate(
            eval_input_fn, checkpoint_path=checkpoint, name="tf")
        got = make(te, tmp_path / trained, evaluate=evaluate).evaluate(
            eval_input_fn, checkpoint_path=checkpoint, name="te")
        assert got["global_step"] == 40
        assert_same_metrics(got, expected)


def test_each_resumes_the_others_run_under_the_strategy(tmp_path, no_tf_config):
    make(tf.estimator, tmp_path / "a").train(per_replica_input_fn, max_steps=20)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    ours = make(te, tmp_path / "a")
    ours.train(per_replica_input_fn, max_steps=40)  # trainexec resumes tf.estimator's run
    theirs = make(tf.estimator, tmp_path / "b")
    theirs.train(per_replica_input_fn, max_steps=40)  # tf.estimator resumes its own
    assert ours.get_variable_value("global_step") == 40
    for name in VARIABLES:
        np.testing.assert_allclose(ours.get_variable_value(name),
                                   theirs.get_variable_value(name), atol=1e-4)
    # And tf.estimator resumes what trainexec wrote.
    again = make(tf.estimator, tmp_path / "a")
    again.train(per_replica_input_fn, max_steps=50)
    assert again.get_variable_value("global_step") == 50
