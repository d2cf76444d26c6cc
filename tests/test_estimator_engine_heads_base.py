"""Heads through an Estimator: a model_fn returning `head.create_estimator_spec(...)`
trains, evaluates, predicts and exports on trainexec's Estimator on every line; on TF
2.15 tf.estimator's Estimator with tf.estimator's head, on the same data, evaluates to
the same numbers (1e-6) and serves the same signatures. And the `Head` interface."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te

pytestmark = pytest.mark.tf_line

_RNG = np.random.RandomState(21)
X = _RNG.normal(size=(64, 3)).astype(np.float32)
W = _RNG.rand(64).astype(np.float32) + 0.5
Y = {"binary": (X[:, :1] + X[:, 1:2] > 0).astype(np.float32),
     "multi_class": np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.int64)[:, None],
     "regression": (X @ np.array([[1.0], [-2.0], [0.5]], np.float32)),
     "multi_label": (X > 0).astype(np.int64)}
HEADS = {  # name -> head from an api (its logits dimension follows)
    "binary": lambda api: api.BinaryClassHead(weight_column="w", thresholds=[0.3]),
    "multi_class": lambda api: api.MultiClassHead(3, weight_column="w"),
    "regression": lambda api: api.RegressionHead(weight_column="w"),
    "multi_label": lambda api: api.MultiLabelHead(3, weight_column="w"),
}


def input_fn(kind, repeat=False):
    def make():
        data = tf.data.Dataset.from_tensor_slices(({"x": X, "w": W}, Y[kind]))
        return (data.repeat() if repeat else data).batch(16)
    return make


def model_fn_for(api, kind):
    def model_fn(features, labels, mode):
        head = HEADS[kind](api)
        kernel = tf.compat.v1.get_variable(
            "kernel", [3, head.logits_dimension],
            initializer=tf.compat.v1.constant_initializer(0.1))
        logits = tf.matmul(features["x"], kernel)
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        step = tf.compat.v1.train.get_global_step()
        if api is te:
            return head.create_estimator_spec(features=features, mode=mode, logits=logits,
                                              labels=labels, optimizer=optimizer)
        return head.create_estimator_spec(  # tf.estimator's heads take no v1 optimizer
            features=features, mode=mode, logits=logits, labels=labels,
            train_op_fn=lambda loss: optimizer.minimize(loss, global_step=step),
            trainable_variables=[kernel])
    return model_fn


def serving_input_fn():
    examples = tf.compat.v1.placeholder(tf.string, [None])
    features = tf.io.parse_example(examples, {"x": tf.io.FixedLenFeature([3], tf.float32)})
    return te.export.ServingInputReceiver(features, {"examples": examples})


@pytest.mark.parametrize("kind", sorted(HEADS))
def test_a_head_trains_evaluates_predicts_and_exports(tmp_path, no_tf_config, kind):
    estimator = te.Estimator(model_fn_for(te, kind), model_dir=str(tmp_path))
    estimator.train(input_fn(kind, repeat=True), steps=8)
    results = estimator.evaluate(input_fn(kind))
    assert results["global_step"] == 8
    assert np.isfinite(results["average_loss"]) and np.isfinite(results["loss"])
    first = next(iter(estimator.predict(input_fn(kind))))
    assert first  # a dict of the head's predictions
    exported = estimator.export_saved_model(str(tmp_path / "export"), serving_input_fn)
    signatures = tf.saved_model.load(exported.decode()).signatures
    assert "serving_default" in signatures and "predict" in signatures


@pytest.mark.estimator
@pytest.mark.parametrize("kind", sorted(HEADS))
def test_the_same_evaluation_as_tf_estimator(tmp_path, no_tf_config, kind):
    made = {}
    for name, api in (("theirs", tf.estimator), ("ours", te)):
        config = api.RunConfig(model_dir=str(tmp_path / name), tf_random_seed=1)
        made[name] = api.Estimator(model_fn_for(api, kind), config=config)
        made[name].train(input_fn(kind, repeat=True), steps=8)
    theirs = made["theirs"].evaluate(input_fn(kind))
    ours = made["ours"].evaluate(input_fn(kind))
    assert set(ours) == set(theirs)
    for key in theirs:
        assert ours[key] == pytest.approx(theirs[key], abs=1e-6), key
    for a, b in zip(list(made["theirs"].predict(input_fn(kind))),
                    list(made["ours"].predict(input_fn(kind)))):
        assert set(a) == set(b)
        for key in a:
            if a[key].dtype.kind in "SUO":
                assert (a[key] == b[key]).all(), key
            else:
                np.testing.assert_allclose(a[key], b[key], atol=1e-6, err_msg=key)


class _Minimal(te.Head):
    name = "minimal"
    logits_dimension = 1
    loss_reduction = "sum"

    def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
        return tf.reduce_sum(logits)

    def predictions(self, logits, keys=None):
        return {"logits": logits}

    def metrics(self, regularization_losses=None):
        return {}

    def update_metrics(self, eval_metrics, features, logits, labels,
                       regularization_losses=None, mode=None):
        return eval_metrics


def test_a_head_of_ones_own_must_implement_create_estimator_spec():
    with pytest.raises(NotImplementedError, match=r"Subclasses of Head must implement "
                       r"`create_estimator_spec\(\)`.*subclass SingleHead"):
        _Minimal().create_estimator_spec(features={}, mode="train", logits=None)
    assert _Minimal().metric_key("auc") == "auc/minimal"


def test_an_unknown_prediction_key_is_refused():
    with pytest.raises(ValueError, match="Prediction key must be in PredictionKeys, given: "
                       "probs.*This head predicts logits"):
        te.BinaryClassHead().predictions(np.zeros((1, 1), np.float32), ["probs"])
