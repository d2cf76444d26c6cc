"""tf.estimator's contract in the corners a review found (each row failed before its fix):
training until the data ends, inputs a persistent graph cannot rewind, a model's own
local init op, queue-based inputs, the hooks' order at the end of training, signatures an
output cannot have, sparse serving inputs, partial model_fns, params of any type."""

import argparse
import functools
import glob
import os

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from engine_models import (FEATURES, data, eval_input_fn, make_model_fn, train_input_fn)
from trainexec.cluster.config import ClusterConfig
from trainexec.estimator_trainer.target import EstimatorTarget
from trainexec.specs import EvalSpec

pytestmark = pytest.mark.tf_line


def finite_input_fn():
    x, y = data(96, 1)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(32)


def tensors_input_fn():  # no dataset: a one-shot iterator's tensors
    x, y = data(100, 2)
    features, labels = tf.compat.v1.data.make_one_shot_iterator(
        tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(50)).get_next()
    return features, labels


def make(model_dir, model_fn=None, **config):
    return te.Estimator(model_fn or make_model_fn(te), model_dir=str(model_dir),
                        params={"lr": 0.05},
                        config=te.RunConfig(save_checkpoints_steps=config.pop("steps", 50),
                                            **config))


def test_train_without_steps_runs_until_the_data_ends(tmp_path, no_tf_config):
    estimator = make(tmp_path)
    estimator.train(finite_input_fn)
    assert estimator.get_variable_value("global_step") == 3  # 96 examples, batches of 32


def test_an_input_of_tensors_is_evaluated_per_checkpoint_not_on_a_kept_graph(tmp_path,
                                                                             no_tf_config):
    estimator = make(tmp_path, keep_checkpoint_max=5)
    estimator.train(train_input_fn, max_steps=100)
    with pytest.raises(ValueError, match="no tf.data.Dataset"):
        estimator.persistent_evaluation(tensors_input_fn)
    target = EstimatorTarget(estimator, EvalSpec(tensors_input_fn))
    try:
        for step in (50, 100):
            path = str(tmp_path / f"model.ckpt-{step}")
            got = target.evaluate(path)
            expected = estimator.evaluate(tensors_input_fn, checkpoint_path=path)
            assert got["loss"] == pytest.approx(expected["loss"]) and got["loss"] > 0
    finally:
        target.close()


def test_a_scaffold_with_its_own_local_init_op(tmp_path, no_tf_config):
    inner = make_model_fn(te)

    def model_fn(features, labels, mode, params):
        spec = inner(features, labels, mode, params)
        if mode != te.ModeKeys.EVAL:
            return spec
        counter = tf.compat.v1.get_local_variable("counter", initializer=tf.constant(0))
        return spec._replace(scaffold=tf.compat.v1.train.Scaffold(
            local_init_op=tf.compat.v1.variables_initializer([counter])))

    estimator = make(tmp_path, model_fn)
    estimator.train(train_input_fn, max_steps=20)
    assert estimator.evaluate(eval_input_fn)["global_step"] == 20


def test_an_input_from_queues_is_evaluated_to_its_end(tmp_path, no_tf_config):
    estimator = make(tmp_path)
    estimator.train(train_input_fn, max_steps=10)

    def queue_input_fn():
        x, y = data(60, 2)
        xs, ys = tf.compat.v1.train.slice_input_producer(
            [tf.constant(x), tf.constant(y)], num_epochs=1, shuffle=False)
        features, labels = tf.compat.v1.train.batch([xs, ys], batch_size=20,
                                                    allow_smaller_final_batch=True)
        return {"x": features}, labels

    assert estimator.evaluate(queue_input_fn)["global_step"] == 10


def test_the_final_checkpoint_is_saved_before_a_user_hooks_end(tmp_path, no_tf_config):
    seen = []

    class AtEnd(tf.compat.v1.train.SessionRunHook):
        def end(self, session):
            seen.append(tf.train.latest_checkpoint(str(tmp_path)))

    make(tmp_path, steps=1000).train(train_input_fn, hooks=[AtEnd()], max_steps=7)
    assert seen == [str(tmp_path / "model.ckpt-7")]


def test_an_output_a_receiver_cannot_serve_is_left_out(tmp_path, no_tf_config, caplog):
    inner = make_model_fn(te)

    def model_fn(features, labels, mode, params):
        spec = inner(features, labels, mode, params)
        if mode != te.ModeKeys.PREDICT:
            return spec
        probabilities = spec.predictions["probabilities"]
        return spec._replace(export_outputs={
            "serving_default": te.export.PredictOutput(spec.predictions),
            "classify": te.export.ClassificationOutput(scores=probabilities)})

    estimator = make(tmp_path, model_fn)
    estimator.train(train_input_fn, max_steps=5)
    raw = te.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, FEATURES])})
    path = estimator.export_saved_model(str(tmp_path / "export"), raw)
    assert set(tf.saved_model.load(path.decode()).signatures) == {"serving_default"}
    assert "no signature classify" in caplog.text


def test_sparse_receivers_partial_model_fns_and_params_of_any_type(tmp_path, no_tf_config):
    with tf.Graph().as_default():
        sparse = tf.compat.v1.sparse_placeholder(tf.float32, name="s")
        receiver = te.export.ServingInputReceiver({"s": sparse}, {"s": sparse})
        assert receiver.receiver_tensors["s"] is sparse

    def model_fn(features, labels, mode, params, units):
        assert units == 8 and params.lr == 0.05
        return make_model_fn(te)(features, labels, mode, {"lr": params.lr})

    estimator = te.Estimator(functools.partial(model_fn, units=8), model_dir=str(tmp_path),
                             params=argparse.Namespace(lr=0.05))
    estimator.train(train_input_fn, max_steps=3)
    assert estimator.params.lr == 0.05 and estimator.params is not estimator.params


def test_evaluators_and_ps_do_not_train(tmp_path):
    cluster = ClusterConfig.from_dict({"cluster": {"chief": ["h:1"], "ps": ["h:2"]},
                                       "task": {"type": "ps", "index": 0}})
    estimator = te.Estimator(make_model_fn(te), model_dir=str(tmp_path),
                             config=te.RunConfig(cluster=cluster), params={"lr": 0.1})
    with pytest.raises(ValueError, match="do not train"):
        estimator.train(train_input_fn, steps=1)
    assert not glob.glob(os.path.join(str(tmp_path), "model.ckpt-*"))
