"""trainexec.estimator under a MirroredStrategy of two replicas (two CPU devices in the
session), in this process: each replica takes its own batch, the gradients are averaged
as tf.estimator averaged them, the checkpoints hold the variables under their own names
(so evaluate, predict and export read them without a strategy), `eval_distribute`
gives the metrics a plain evaluation gives, only the first replica's hooks run, and
tf.data autotunes the input only where the input_fn asks."""

import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import dataset_options_pb2

import trainexec.estimator as te
from engine_models import FEATURES, data, eval_input_fn, make_model_fn, predict_input_fn, \
    serving_input_receiver_fn_for
from trainexec.errors import ConfigError

pytestmark = pytest.mark.tf_line

TWO_CPUS = ["/device:CPU:0", "/device:CPU:1"]


def two_replicas():
    return tf.distribute.MirroredStrategy(devices=TWO_CPUS)


def session_config():
    return tf.compat.v1.ConfigProto(allow_soft_placement=True, device_count={"CPU": 2})


def batches_of(size):
    def input_fn():
        x, y = data(512, 1)
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(size)

    return input_fn


def sgd_model_fn(features, labels, mode, params):
    del params
    w = tf.compat.v1.get_variable("w", [FEATURES, 2])
    logits = tf.matmul(features["x"], w)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return te.EstimatorSpec(mode, loss=loss, train_op=train_op)


def estimator(model_dir, model_fn=None, **strategies):
    config = te.RunConfig(model_dir=str(model_dir), tf_random_seed=5,
                          save_checkpoints_steps=10, session_config=session_config(),
                          **strategies)
    return te.Estimator(model_fn or make_model_fn(te), config=config, params={"lr": 0.05})


def test_two_replicas_take_one_step_as_one_batch_of_both(tmp_path, no_tf_config):
    # Replica 0 takes batch 1, replica 1 batch 2; their gradients are averaged (the
    # optimizer scales the mean loss by 1/2 before the all-reduce sums): the step of one
    # batch of 32 made of both. Summed gradients would step twice as far.
    mirrored = estimator(tmp_path / "mirrored", sgd_model_fn, train_distribute=two_replicas())
    mirrored.train(batches_of(16), max_steps=3)
    plain = estimator(tmp_path / "plain", sgd_model_fn)
    plain.train(batches_of(32), max_steps=3)
    assert mirrored.get_variable_value("global_step") == 3
    np.testing.assert_allclose(mirrored.get_variable_value("w"),
                               plain.get_variable_value("w"), atol=1e-6)


def test_a_mirrored_run_evaluates_predicts_and_exports_without_a_strategy(tmp_path,
                                                                          no_tf_config):
    model = estimator(tmp_path, train_distribute=two_replicas())
    model.train(batches_of(32), max_steps=20)
    assert sorted(model.get_variable_names()) == [
        "beta1_power", "beta2_power", "global_step", "hidden/bias", "hidden/bias/Adam",
        "hidden/bias/Adam_1", "hidden/kernel", "hidden/kernel/Adam",
        "hidden/kernel/Adam_1", "logits/bias", "logits/bias/Adam", "logits/bias/Adam_1",
        "logits/kernel", "logits/kernel/Adam", "logits/kernel/Adam_1"]
    plain = estimator(tmp_path)  # the same model_dir, no strategy
    metrics = plain.evaluate(eval_input_fn)
    assert metrics["global_step"] == 20 and metrics["accuracy"] > 0.6
    predicted = [p["class"] for p in plain.predict(predict_input_fn)]
    assert len(predicted) == 7
    export = plain.export_saved_model(str(tmp_path / "export"),
                                      serving_input_receiver_fn_for(te))
    assert os.path.isfile(os.path.join(export.decode(), "saved_model.pb"))


def test_eval_distribute_gives_the_metrics_of_a_plain_evaluation(tmp_path, no_tf_config):
    estimator(tmp_path).train(batches_of(32), max_steps=20)
    plain = estimator(tmp_path).evaluate(eval_input_fn)
    split = estimator(tmp_path, eval_distribute=two_replicas())
    # 4 batches of 50: each replica takes 2; the metrics count all 200 examples.
    assert split.evaluate(eval_input_fn) == pytest.approx(plain, abs=1e-6)
    persistent = split.persistent_evaluation(eval_input_fn)
    try:
        for _ in range(2):  # the strategy's iterator is rewound for each checkpoint
            again = persistent.evaluate(split.latest_checkpoint())
            assert again == pytest.approx(plain, abs=1e-6)
    finally:
        persistent.close()


class Counting(tf.compat.v1.train.SessionRunHook):
    made = []

    def __init__(self):
        self.runs = 0
        Counting.made.append(self)

    def after_run(self, run_context, run_values):
        self.runs += 1


def test_only_the_first_replicas_hooks_run(tmp_path, no_tf_config):
    inner = make_model_fn(te)

    def model_fn(features, labels, mode, params):
        spec = inner(features, labels, mode, params)
        return te.EstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op,
                                training_hooks=[Counting()],
                                training_chief_hooks=[Counting()])

    Counting.made.clear()
    estimator(tmp_path, model_fn, train_distribute=two_replicas()).train(
        batches_of(32), max_steps=5)
    assert len(Counting.made) == 4  # two hooks per replica
    assert sorted(hook.runs for hook in Counting.made) == [0, 0, 5, 5]


def test_an_input_fn_of_tensors_is_refused_naming_it(tmp_path, no_tf_config):
    def tensors_input_fn():
        x, y = data(32, 1)
        return {"x": tf.constant(x)}, tf.constant(y)

    model = estimator(tmp_path, train_distribute=two_replicas())
    with pytest.raises(TypeError, match="input_fn .tensors_input_fn. returned tuple, but "
                       "under a distribution strategy .MirroredStrategy. it must return a "
                       "tf.data.Dataset"):
        model.train(tensors_input_fn, max_steps=1)
    assert model.latest_checkpoint() is None


@pytest.mark.keras
def test_keras_layers_under_two_replicas_train_or_are_refused_before_anything_is_written(
        tmp_path, no_tf_config):
    def keras_model_fn(features, labels, mode, params):
        del params
        logits = tf.keras.layers.Dense(2)(features["x"])
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return te.EstimatorSpec(mode, loss=loss, train_op=train_op)

    model = estimator(tmp_path, keras_model_fn, train_distribute=two_replicas())
    if tf.keras.__name__.startswith("tf_keras") or tf.__version__.startswith("2.15"):
        model.train(batches_of(32), max_steps=2)  # Keras 2: one variable per layer weight
        assert sorted(model.get_variable_names()) == [
            "dense/bias", "dense/kernel", "global_step"]
        return
    with pytest.raises(ConfigError, match=r"RunConfig `train_distribute` "
                       r"\(MirroredStrategy \(2 replicas\)\): the model_fn's variables "
                       r"dense/kernel/replica_1.* are replicas' copies .* tf_keras"):
        model.train(batches_of(32), max_steps=2)
    assert os.listdir(tmp_path) == []


class _InputOptions(tf.compat.v1.train.SessionRunHook):
    """Records the autotune setting of each options node in the training graph."""

    seen: list = []

    def begin(self):
        for op in tf.compat.v1.get_default_graph().get_operations():
            if op.type == "OptionsDataset":
                options = dataset_options_pb2.Options.FromString(
                    op.get_attr("serialized_options"))
                _InputOptions.seen.append(
                    options.autotune_options.enabled
                    if options.autotune_options.HasField("enabled") else None)


@pytest.mark.parametrize("asked, host", [(None, False), (True, True)])
def test_the_strategys_input_autotunes_only_where_the_input_fn_asks(tmp_path, no_tf_config,
                                                                    asked, host):
    # Autotuning's threads held a MWMS chief's session close up to 60 s (destroying an
    # iterator waits for its thread's next tuning): the input_fn's dataset tunes only if
    # it asks; the two replicas' device datasets (a generator and a fixed prefetch:
    # nothing to tune) never do.
    def input_fn():
        dataset = batches_of(32)()
        if asked is not None:
            options = tf.data.Options()
            options.autotune.enabled = asked
            dataset = dataset.with_options(options)
        return dataset

    _InputOptions.seen.clear()
    estimator(tmp_path, sgd_model_fn, train_distribute=two_replicas()).train(
        input_fn, max_steps=2, hooks=[_InputOptions()])
    # The strategy adds options nodes of its own, which leave autotuning unset.
    assert [enabled for enabled in _InputOptions.seen if enabled is not None] == [
        host, False, False]
