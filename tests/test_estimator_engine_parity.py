"""trainexec.estimator beside the real tf.estimator (TensorFlow 2.15 line): the same
model_fn and data give the same numbers, the same checkpoint names, the same serving
signatures; each reads the other's checkpoints."""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from engine_models import (data, eval_input_fn, make_model_fn, predict_input_fn,
                           serving_input_receiver_fn_for, train_input_fn)

pytestmark = [pytest.mark.estimator, pytest.mark.tf_line]


def both(model_dir, layers):
    """(tf.estimator's, trainexec.estimator's) Estimators of one model_fn on model_dir."""
    made = []
    for api in (tf.estimator, te):
        config = api.RunConfig(model_dir=str(model_dir), save_checkpoints_steps=50,
                               tf_random_seed=3)
        made.append(api.Estimator(make_model_fn(api, layers), config=config,
                                  params={"lr": 0.05}))
    return made


@pytest.mark.parametrize("layers", [False, True], ids=["variables", "v1-layers"])
def test_the_same_checkpoint_gives_the_same_numbers(tmp_path, no_tf_config, layers):
    theirs, ours = both(tmp_path, layers)
    theirs.train(train_input_fn, max_steps=100)
    assert ours.get_variable_names() == theirs.get_variable_names()
    for checkpoint in (str(tmp_path / "model.ckpt-50"), None):
        expected = theirs.evaluate(eval_input_fn, checkpoint_path=checkpoint)
        got = ours.evaluate(eval_input_fn, checkpoint_path=checkpoint)
        assert set(got) == set(expected)
        for key in expected:
            assert got[key] == pytest.approx(expected[key], abs=1e-5), key
    expected = list(theirs.predict(predict_input_fn))
    got = list(ours.predict(predict_input_fn))
    for a, b in zip(expected, got):
        assert a["class"] == b["class"]
        np.testing.assert_allclose(a["probabilities"], b["probabilities"], atol=1e-6)
    # The same serving signature: inputs, outputs, method.
    paths = [api_estimator.export_saved_model(str(tmp_path / name),
                                              serving_input_receiver_fn_for(api))
             for name, api, api_estimator in (("theirs", tf.estimator, theirs),
                                              ("ours", te, ours))]
    signatures = [tf.saved_model.load(p.decode()).signatures["serving_default"]
                  for p in paths]
    assert [sorted(s.structured_outputs) for s in signatures][0] == \
        sorted(signatures[1].structured_outputs)
    x = tf.constant(data(5, 9)[0])
    np.testing.assert_allclose(signatures[0](x=x)["probabilities"].numpy(),
                               signatures[1](x=x)["probabilities"].numpy(), atol=1e-6)


def test_each_resumes_the_others_checkpoint(tmp_path, no_tf_config):
    theirs, _ = both(tmp_path / "a", layers=False)
    theirs.train(train_input_fn, max_steps=60)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    _, ours = both(tmp_path / "a", layers=False)
    ours.train(train_input_fn, max_steps=100)  # trainexec resumes tf.estimator's run
    theirs_b, _ = both(tmp_path / "b", layers=False)
    theirs_b.train(train_input_fn, max_steps=100)  # tf.estimator resumes its own
    assert ours.get_variable_value("global_step") == 100
    for name in ("hidden/kernel", "logits/bias"):
        np.testing.assert_allclose(ours.get_variable_value(name),
                                   theirs_b.get_variable_value(name), atol=1e-4)
    # And tf.estimator evaluates what trainexec wrote.
    theirs_a, _ = both(tmp_path / "a", layers=False)
    assert theirs_a.evaluate(eval_input_fn)["global_step"] == 100
    assert os.path.exists(tmp_path / "a" / "checkpoint")
