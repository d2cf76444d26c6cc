"""Calling a user's model_fn (trainexec.estimator_engine.calls), directly: the argument
names read from functions, partials, methods and callable objects; the signature checks
made before anything is built; features, labels, mode, params and config passed by
name to the model_fns that name them; and what a model_fn returns, checked."""

import functools

import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.estimator_engine.calls import call_model_fn, check_model_fn, fn_args
from trainexec.estimator_engine.model_spec import EstimatorSpec, ModeKeys

pytestmark = pytest.mark.tf_line

CONFIG = te.RunConfig()


def _predict_spec(features, mode=ModeKeys.PREDICT):
    return EstimatorSpec(mode, predictions=tf.identity(features["x"]))


def test_the_argument_names_leave_out_varargs_self_and_what_a_partial_binds():
    def fn(a, b, *args, c, d=1, **kwargs):
        del args, kwargs

    assert fn_args(fn) == ("a", "b", "c", "d")
    # `a` bound by position and `c` by keyword: the caller can pass only b and d.
    assert fn_args(functools.partial(fn, 1, c=3)) == ("b", "d")

    class Model:
        def model_fn(self, features, labels):
            del features, labels

        def __call__(self, features, mode):
            del features, mode

    assert fn_args(Model().model_fn) == ("features", "labels")
    assert fn_args(Model()) == ("features", "mode")
    with pytest.raises(TypeError, match="42 is not a function whose arguments can be read"):
        fn_args(42)


def test_signature_checks_refuse_naming_the_model_fn_and_a_partials_params_do_not_count():
    # Accepted (no error): any of the five in any order; empty params need no `params`.
    check_model_fn(lambda config, features: None, None)
    check_model_fn(lambda params, mode, labels, features, config: None, {"units": 3})
    check_model_fn(lambda features: None, {})

    class Network:
        def __call__(self, labels, mode):
            del labels, mode

    with pytest.raises(ValueError, match=r"model_fn \(Network\) must include a `features` "
                       "argument"):
        check_model_fn(Network(), None)

    def model_fn(features, params):
        del features, params

    with pytest.raises(ValueError, match=r"does not include params argument, but params "
                       r"\(\{'lr': 0\.1\}\) are given"):
        check_model_fn(functools.partial(model_fn, params={"lr": 0.5}), {"lr": 0.1})
    with pytest.raises(ValueError, match="cannot fill: hidden, depth; it passes only "
                       "features, labels, mode, params, config"):
        check_model_fn(lambda features, hidden, depth: None, None)


def test_each_argument_a_model_fn_names_is_passed_by_name():
    seen = {}

    def model_fn(config, params, features, mode, labels):  # not tf.estimator's order
        seen.update(config=config, params=params, mode=mode, labels=labels)
        return _predict_spec(features, mode)

    with tf.Graph().as_default():
        features, labels = {"x": tf.constant([[1.0]])}, tf.constant([[0.0]])
        spec = call_model_fn(model_fn, features, labels, ModeKeys.PREDICT, {"lr": 0.1},
                             CONFIG)
        assert spec.mode == ModeKeys.PREDICT
        assert spec.predictions.op.inputs[0].name == features["x"].name
    assert seen == {"config": CONFIG, "params": {"lr": 0.1}, "mode": ModeKeys.PREDICT,
                    "labels": labels}


def test_a_model_fn_gets_only_what_it_names_and_labels_only_outside_predict():
    def features_only(features):  # a TypeError if given anything else
        return _predict_spec(features)

    with tf.Graph().as_default():
        features, labels = {"x": tf.constant([[1.0]])}, tf.constant([[0.0]])
        # Predicting, labels (an input_fn's, dropped) need no `labels` argument.
        assert call_model_fn(features_only, features, labels, ModeKeys.PREDICT, {"a": 1},
                             CONFIG).mode == ModeKeys.PREDICT
        for mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            with pytest.raises(ValueError, match=r"model_fn does not take labels, but "
                               r"input_fn returns labels: add `labels` to the arguments of "
                               r"model_fn \(features_only\)"):
                call_model_fn(features_only, features, labels, mode, None, CONFIG)


def test_what_a_model_fn_returns_must_be_an_estimator_spec_of_its_mode():
    with tf.Graph().as_default():
        features = {"x": tf.constant([[1.0]])}
        with pytest.raises(ValueError, match=r"model_fn should return an EstimatorSpec; "
                           r"model_fn \(<lambda>\) returned None in mode 'eval'"):
            call_model_fn(lambda features: None, features, None, ModeKeys.EVAL, None,
                          CONFIG)
        with pytest.raises(ValueError, match=r"was called in mode 'eval' but returned an "
                           r"EstimatorSpec for mode 'infer': pass `mode` through"):
            call_model_fn(lambda features: _predict_spec(features), features, None,
                          ModeKeys.EVAL, None, CONFIG)
        # A spec without a mode (a model_fn without `mode`) is taken as the mode's.
        spec = call_model_fn(lambda features: _predict_spec(features, mode=None), features,
                             None, ModeKeys.PREDICT, None, CONFIG)
        assert spec.mode is None and spec.predictions is not None
