"""trainexec.estimator's serving exports: receivers, export outputs and their signatures
as TF Serving's Predict, Classify and Regress APIs read them, loaded back with
tf.saved_model.load."""

import numpy as np
import pytest
import tensorflow as tf

import trainexec.estimator as te
from engine_models import FEATURES, data, train_input_fn

pytestmark = pytest.mark.tf_line

export = te.export


def model_fn(features, labels, mode, params):
    x = features["x"] if isinstance(features, dict) else features
    w = tf.compat.v1.get_variable("w", [FEATURES, 2])
    logits = tf.matmul(x, w)
    probabilities = tf.nn.softmax(logits)
    outputs = params["outputs"](logits, probabilities)
    if mode == te.ModeKeys.PREDICT:
        return te.EstimatorSpec(mode, predictions={"probabilities": probabilities},
                                export_outputs=outputs)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return te.EstimatorSpec(mode, loss=loss, train_op=train_op)


FEATURE_SPEC = {"x": tf.io.FixedLenFeature([FEATURES], tf.float32)}


def trained(tmp_path, outputs):
    estimator = te.Estimator(model_fn, model_dir=str(tmp_path), params={"outputs": outputs})
    estimator.train(train_input_fn, max_steps=5)
    return estimator


def examples(points):
    return tf.constant([tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=list(map(float, point))))
    })).SerializeToString() for point in points])


def test_classify_and_regress_signatures_over_parsed_examples(tmp_path, no_tf_config):
    def outputs(logits, probabilities):
        return {"serving_default": export.PredictOutput({"p": probabilities}),
                "classify": export.ClassificationOutput(
                    scores=probabilities, classes=tf.strings.as_string(tf.argmax(logits, 1))),
                "regress": export.RegressionOutput(value=probabilities[:, 1])}

    estimator = trained(tmp_path, outputs)
    path = estimator.export_saved_model(
        str(tmp_path / "export"), export.build_parsing_serving_input_receiver_fn(FEATURE_SPEC))
    loaded = tf.saved_model.load(path.decode())
    assert set(loaded.signatures) == {"serving_default", "classify", "regress"}
    points = data(3, 5)[0]
    predicted = loaded.signatures["serving_default"](examples=examples(points))["p"].numpy()
    classified = loaded.signatures["classify"](inputs=examples(points))
    np.testing.assert_allclose(classified["scores"].numpy(), predicted, atol=1e-6)
    assert classified["classes"].numpy().tolist() == [
        str(i).encode() for i in predicted.argmax(axis=1)]
    regressed = loaded.signatures["regress"](inputs=examples(points))["outputs"].numpy()
    np.testing.assert_allclose(regressed.ravel(), predicted[:, 1], atol=1e-6)


def test_a_raw_receiver_a_single_output_and_receiver_alternatives(tmp_path, no_tf_config):
    estimator = trained(tmp_path, lambda logits, probabilities: {
        "scores": export.PredictOutput(probabilities)})  # one output: also the default

    def receiver_fn():
        x = tf.compat.v1.placeholder(tf.float32, [None, FEATURES], name="x")
        serialized = tf.compat.v1.placeholder(tf.string, [None], name="examples")
        return export.TensorServingInputReceiver(
            x, {"x": x}, receiver_tensors_alternatives={"parsed": {"x": x}})

    path = estimator.export_saved_model(str(tmp_path / "export"), receiver_fn)
    loaded = tf.saved_model.load(path.decode())
    assert {"serving_default", "scores", "parsed:scores"} <= set(loaded.signatures)
    points = tf.constant(data(2, 1)[0])
    default = loaded.signatures["serving_default"](x=points)["output"].numpy()
    np.testing.assert_allclose(loaded.signatures["scores"](x=points)["output"].numpy(), default)
    raw = export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, FEATURES])})
    again = tf.saved_model.load(estimator.export_saved_model(
        str(tmp_path / "raw"), raw).decode())
    np.testing.assert_allclose(again.signatures["serving_default"](x=points)["output"].numpy(),
                               default, atol=1e-6)


@pytest.mark.parametrize("outputs, receiver, words", [
    (lambda logits, p: {"a": export.PredictOutput(p), "b": export.PredictOutput(logits)},
     None, "none is 'serving_default'"),
    (lambda logits, p: {"serving_default": export.ClassificationOutput(scores=p)},
     None, "Classification signatures take serialized tf.Example strings"),
])
def test_export_rows(tmp_path, no_tf_config, outputs, receiver, words):
    estimator = trained(tmp_path, outputs)
    raw = export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, FEATURES])})
    with pytest.raises(ValueError, match=words):
        estimator.export_saved_model(str(tmp_path / "export"), receiver or raw)
    assert not list((tmp_path / "export").glob("[0-9]*"))  # nothing half-written counts


@pytest.mark.parametrize("build, words", [
    (lambda: export.PredictOutput({1: tf.zeros([1])}), "must be a string"),
    (lambda: export.ClassificationOutput(), "needs `scores`, `classes` or both"),
    (lambda: export.ClassificationOutput(classes=tf.zeros([1])), "string Tensor"),
    (lambda: export.RegressionOutput(tf.zeros([1], tf.int32)), "float32 Tensor"),
    (lambda: export.ServingInputReceiver({"x": 1}, {}), r"features\['x'\]"),
    (lambda: export.TensorServingInputReceiver({"x": tf.zeros([1])}, {}), "single Tensor"),
    (lambda: export.build_parsing_serving_input_receiver_fn({}), "non-empty dict"),
])
def test_output_and_receiver_rows(build, words):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=words):
            build()


def test_the_model_fns_scaffold_writes_and_initializes_the_saved_model(tmp_path, no_tf_config):
    """As in tf.estimator: the Scaffold's Saver (its own names) writes the variables, and
    its local_init_op (instead of the default one) is the SavedModel's main op."""

    def scaffolded_model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", initializer=3.0)
        offset = tf.compat.v1.get_local_variable("offset", initializer=0.0)
        step = tf.compat.v1.train.get_global_step()
        scaffold = tf.compat.v1.train.Scaffold(
            saver=tf.compat.v1.train.Saver({"weights/w": w, "step": step}),
            local_init_op=tf.group(tf.compat.v1.assign(offset, 100.0)))
        output = features["x"] * w + offset
        return te.EstimatorSpec(mode, predictions=output, loss=tf.reduce_mean(output),
                                train_op=tf.compat.v1.assign_add(step, 1), scaffold=scaffold)

    estimator = te.Estimator(scaffolded_model_fn, model_dir=str(tmp_path))
    estimator.train(lambda: tf.data.Dataset.from_tensors(({"x": [1.0]}, [0.0])))
    assert set(estimator.get_variable_names()) == {"weights/w", "step"}

    def receiver():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="input_x")
        return export.ServingInputReceiver({"x": x}, {"x": x})

    path = estimator.export_saved_model(str(tmp_path / "export"), receiver).decode()
    assert {name for name, _ in tf.train.list_variables(f"{path}/variables/variables")} == {
        "weights/w", "step"}
    served = tf.saved_model.load(path).signatures["serving_default"](x=tf.constant([2.0]))
    np.testing.assert_allclose(served["output"].numpy(), [106.0])  # 2 * 3 + 100
