"""An optimizer by name, instance or callable, as tf.estimator takes it; Keras 2's
optimizers where there are (tf.estimator's names), else the v1 ones; one update step
and who counts the global step."""

import pytest
import tensorflow as tf

from trainexec.estimator_engine.canned import optimizers

pytestmark = pytest.mark.tf_line


@pytest.mark.parametrize("name", optimizers.OPTIMIZER_NAMES)
def test_each_name_gives_an_optimizer_with_the_learning_rate_asked(name):
    with tf.Graph().as_default():
        optimizer = optimizers.get_optimizer(name, 0.25)
        if optimizers.keras2_optimizers() is not None:
            assert optimizer.get_config()["learning_rate"] == pytest.approx(0.25)
        else:
            assert isinstance(optimizer, tf.compat.v1.train.Optimizer)


def test_an_unknown_name_is_refused_with_the_names_known():
    for call in (optimizers.check_optimizer, optimizers.get_optimizer):
        with pytest.raises(ValueError, match=r"Unsupported optimizer name: Lamb\. "
                           r"Supported names are: \('Adagrad', 'Adam', 'Ftrl', "
                           r"'RMSProp', 'SGD'\)"):
            call("Lamb")
    with pytest.raises(ValueError, match="given: None"):
        optimizers.check_optimizer(None)


def test_instances_and_callables_are_used_as_given():
    with tf.Graph().as_default():
        given = tf.compat.v1.train.GradientDescentOptimizer(0.5)
        assert optimizers.get_optimizer(given) is given
        assert optimizers.get_optimizer(lambda: given) is given


@pytest.mark.parametrize("advances", [True, False])
def test_a_v1_step_advances_the_global_step_only_when_asked(advances):
    with tf.Graph().as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        var = tf.compat.v1.get_variable("w", initializer=1.0)
        optimizer = optimizers.get_optimizer(
            lambda: tf.compat.v1.train.GradientDescentOptimizer(0.5))
        optimizers.own_global_step(optimizer)
        op = optimizers.apply_updates(optimizer, var * var, [var], advances)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(op)
            assert session.run([var, step]) == [pytest.approx(0.0), int(advances)]


def test_a_keras2_optimizer_counts_in_the_global_step_under_tf_estimators_names():
    keras2 = optimizers.keras2_optimizers()
    if keras2 is None:
        pytest.skip("no Keras 2 optimizers here (neither tf.keras 2 nor tf_keras)")
    with tf.Graph().as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        with tf.compat.v1.variable_scope("dnn"):
            var = tf.compat.v1.get_variable("w", initializer=1.0)
        optimizer = optimizers.get_optimizer("Adagrad", 0.1)
        optimizers.own_global_step(optimizer)
        with tf.compat.v1.name_scope("training"):
            op = optimizers.apply_updates(optimizer, var * var, [var], True)
        names = sorted(v.op.name for v in tf.compat.v1.global_variables())
        assert names == ["dnn/w", "global_step", "training/Adagrad/decay",
                         "training/Adagrad/dnn/w/accumulator",
                         "training/Adagrad/learning_rate"]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(op)
            assert session.run(step) == 1


def test_an_optimizer_that_cannot_update_a_graph_is_refused_naming_the_fix():
    with tf.Graph().as_default():
        var = tf.compat.v1.get_variable("w", initializer=1.0)
        with pytest.raises(ValueError, match="tf.compat.v1.train optimizer"):
            optimizers.apply_updates(object(), var * var, [var], True)


@pytest.mark.parametrize("name, v1_class", [
    ("Adagrad", "AdagradOptimizer"), ("Adam", "AdamOptimizer"), ("Ftrl", "FtrlOptimizer"),
    ("RMSProp", "RMSPropOptimizer"), ("SGD", "GradientDescentOptimizer")])
def test_without_keras2_a_name_gives_the_v1_optimizer_with_keras_defaults(
        monkeypatch, name, v1_class):
    monkeypatch.setattr(optimizers, "keras2_optimizers", lambda: None)
    with tf.Graph().as_default():
        optimizer = optimizers.get_optimizer(name)
        assert type(optimizer) is getattr(tf.compat.v1.train, v1_class)
        var = tf.compat.v1.get_variable("w", initializer=1.0)
        step = optimizers.apply_updates(optimizer, var, [var], False)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(step)
            moved = 1.0 - session.run(var)  # d(var)/d(var) = 1: one step of the rate
        first_step = {"SGD": 0.01, "Adam": 0.001, "Adagrad": 0.001 / 1.1 ** 0.5}
        if name in first_step:  # Keras's default rate (Ftrl's and RMSProp's first
            assert moved == pytest.approx(first_step[name], rel=1e-3)  # steps differ)
        else:
            assert moved > 0
