"""EstimatorSpec is checked as tf.estimator checks it: the same exception types and the
words of tf.estimator's messages (what a caller matching them sees), then what was given
and the fix; PREDICT specs always carry a default export output."""

import re

import pytest
import tensorflow as tf

import trainexec.estimator as te
from trainexec.estimator_engine.model_spec import EstimatorSpec, ModeKeys

pytestmark = pytest.mark.tf_line

TRAIN, EVAL, PREDICT = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT


class Hook(tf.compat.v1.train.SessionRunHook):
    pass


def sparse():
    return tf.sparse.SparseTensor(indices=[[0]], values=[0.0], dense_shape=[1])


# (what the model_fn returns, given `loss` and a no-op `op`) -> exception, tf.estimator's
# words, and trainexec's own guidance in the same message.
ROWS = [
    (lambda loss, op: EstimatorSpec(TRAIN, loss=loss), ValueError,
     "Missing train_op", "optimizer.minimize"),
    (lambda loss, op: EstimatorSpec(TRAIN, train_op=op), ValueError,
     "Missing loss", "mode TRAIN needs `loss`"),
    (lambda loss, op: EstimatorSpec(EVAL), ValueError, "Missing loss", "mode EVAL"),
    (lambda loss, op: EstimatorSpec(PREDICT), ValueError,
     "Missing predictions", "a Tensor or a dict of Tensors"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=1.0), TypeError,
     "loss must be Tensor", r"given: 1\.0 \(type float\)"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=[loss]), TypeError,
     "loss must be Tensor", "type list"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=sparse()), TypeError,
     "loss must be Tensor", "type SparseTensor"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=tf.ones([3])), ValueError,
     "Loss must be scalar", r"tf\.reduce_mean"),
    (lambda loss, op: EstimatorSpec(TRAIN, loss=loss, train_op="step"), TypeError,
     "train_op must be Operation or Tensor", "type str"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=loss, predictions={"n": 1.0}), TypeError,
     r"predictions\[n\] must be Tensor", "holds Tensors only"),
    (lambda loss, op: EstimatorSpec(PREDICT, predictions={"s": sparse()}), TypeError,
     r"predictions\[s\] must be Tensor", r"tf\.sparse\.to_dense"),
    (lambda loss, op: EstimatorSpec(PREDICT, predictions=[loss]), TypeError,
     "predictions must be Tensor", "type list"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=loss, eval_metric_ops=loss), TypeError,
     "eval_metric_ops must be a dict", "Keras Metric objects"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=loss, eval_metric_ops={"a": loss}), TypeError,
     r"Values of eval_metric_ops must be \(metric_value, update_op\) tuples",
     r"for key: a .*tf\.compat\.v1\.metrics\.accuracy"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=loss, eval_metric_ops={"a": (loss, op, op)}),
     TypeError, r"must be \(metric_value, update_op\) tuples", "type tuple"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=loss, eval_metric_ops={"a": (2.0, op)}),
     TypeError, r"tuples of Tensors and Operations", r"given: 2\.0 \(type float\) in a"),
    (lambda loss, op: EstimatorSpec(TRAIN, loss=loss, train_op=op, training_hooks=[object()]),
     TypeError, "All hooks must be SessionRunHook instances", "`training_hooks`"),
    (lambda loss, op: EstimatorSpec(TRAIN, loss=loss, train_op=op,
                                    training_chief_hooks=[Hook(), "hook"]),
     TypeError, "All hooks must be SessionRunHook instances", "`training_chief_hooks`"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=loss, evaluation_hooks=[1]),
     TypeError, "All hooks must be SessionRunHook instances", "`evaluation_hooks`"),
    (lambda loss, op: EstimatorSpec(PREDICT, predictions=loss, prediction_hooks=[1]),
     TypeError, "All hooks must be SessionRunHook instances", "`prediction_hooks`"),
    (lambda loss, op: EstimatorSpec(EVAL, loss=loss, scaffold="scaffold"), TypeError,
     r"scaffold must be tf\.train\.Scaffold", r"tf\.compat\.v1\.train\.Scaffold"),
    # A saver that can neither save nor restore (a tf.train.Checkpoint, or any object
    # with save and restore, is taken: tests/test_estimator_engine_validation.py).
    (lambda loss, op: EstimatorSpec(EVAL, loss=loss, scaffold=tf.compat.v1.train.Scaffold(
        saver=object())), TypeError, r"scaffold\.saver", "must save and restore"),
    (lambda loss, op: EstimatorSpec(PREDICT, predictions=loss, export_outputs=te.export
                                    .PredictOutput(loss)), TypeError,
     "`export_outputs` must be dict", "maps signature names to ExportOutputs"),
    (lambda loss, op: EstimatorSpec(PREDICT, predictions={"p": loss},
                                    export_outputs={"x": loss}), TypeError,
     "Values in `export_outputs` must be ExportOutput objects", "PredictOutput"),
    (lambda loss, op: EstimatorSpec(PREDICT, predictions=loss, export_outputs={
        "a": te.export.PredictOutput(loss), "b": te.export.RegressionOutput(loss)}),
     ValueError, "Multiple `export_outputs` were provided", "none is 'serving_default'"),
    (lambda loss, op: EstimatorSpec("fit", loss=loss), ValueError, "`mode` .'fit'.",
     "ModeKeys"),
]


@pytest.mark.parametrize("build, error, upstream_words, guidance", ROWS)
def test_bad_spec_rows(build, error, upstream_words, guidance):
    with tf.Graph().as_default():
        with pytest.raises(error, match=upstream_words) as raised:
            build(tf.constant(1.0), tf.no_op())
        assert re.search(guidance, str(raised.value)), str(raised.value)


@pytest.mark.parametrize("field", ["loss", "train_op", "predictions", "metric"])
def test_tensors_of_another_graph_are_refused(field):
    with tf.Graph().as_default():
        other = tf.constant(1.0)
        other_op = tf.no_op()
    fields = {"loss": dict(loss=other), "train_op": dict(train_op=other_op),
              "predictions": dict(predictions={"p": other}),
              "metric": dict(eval_metric_ops={"m": (other_op, other)})}[field]
    with tf.Graph().as_default():
        arguments = dict(loss=tf.constant(1.0), train_op=tf.no_op())
        with pytest.raises(ValueError, match="must be from the default graph") as raised:
            EstimatorSpec(TRAIN, **{**arguments, **fields})
        assert "Build it inside the model_fn" in str(raised.value)


def test_a_loss_of_one_element_becomes_a_scalar_and_none_gives_defaults():
    with tf.Graph().as_default():
        spec = EstimatorSpec(TRAIN, loss=tf.constant([2.0]), train_op=tf.no_op())
        assert spec.loss.shape == tf.TensorShape([])
        assert isinstance(spec.scaffold, tf.compat.v1.train.Scaffold)
        assert spec.predictions == {} and spec.eval_metric_ops == {}
        assert spec.training_hooks == () and spec.export_outputs is None
        # A loss of unknown size is taken as tf.estimator takes it (one element when run).
        batch = tf.compat.v1.placeholder(tf.float32, [None])
        assert EstimatorSpec(EVAL, loss=batch).loss.shape == tf.TensorShape([])
        unknown = tf.compat.v1.placeholder(tf.float32, None)
        assert EstimatorSpec(EVAL, loss=unknown).loss is unknown


def test_tuple_valued_metrics_are_kept_as_given():
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        value = ((loss, tf.constant(2)), tf.constant(3.0, tf.float64))
        spec = EstimatorSpec(EVAL, loss=loss, eval_metric_ops={"nested": (value, tf.no_op()),
                                                               "listed": [loss, tf.no_op()]})
        assert spec.eval_metric_ops["nested"][0] is value
        assert isinstance(spec.eval_metric_ops["listed"], tuple)


def test_predict_specs_always_have_a_default_export_output():
    with tf.Graph().as_default():
        scores = tf.constant([[0.2, 0.8]])
        plain = EstimatorSpec(PREDICT, predictions={"scores": scores})
        assert list(plain.export_outputs) == ["serving_default"]
        assert plain.export_outputs["serving_default"].outputs == {"scores": scores}
        single = EstimatorSpec(PREDICT, predictions=scores)
        assert single.export_outputs["serving_default"].outputs == {"output": scores}
        only = te.export.RegressionOutput(tf.constant([1.0]))
        named = EstimatorSpec(PREDICT, predictions=scores, export_outputs={"head": only})
        assert named.export_outputs == {"head": only, "serving_default": only}
        # Only PREDICT specs get one: tf.estimator leaves other modes' as given.
        assert EstimatorSpec(EVAL, loss=tf.constant(1.0)).export_outputs is None


def test_replace_checks_the_new_spec_and_keeps_the_mode():
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        spec = EstimatorSpec(EVAL, loss=loss, predictions={"loss": loss})
        assert list(spec._replace(predictions={"m": loss}).predictions) == ["m"]
        assert spec._replace(mode=EVAL).mode == EVAL
        with pytest.raises(ValueError, match="Loss must be scalar"):
            spec._replace(loss=tf.constant([1.0, 2.0]))
        with pytest.raises(ValueError, match="mode of EstimatorSpec cannot be changed") as raised:
            spec._replace(mode=TRAIN)
        assert "mode='train'" in str(raised.value)
        with pytest.raises(ValueError, match="no field losses"):
            spec._replace(losses=loss)


def test_a_model_fn_naming_no_export_outputs_is_served_by_default(tmp_path, no_tf_config):
    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.ones_initializer())
        doubled = features["x"] * w * 2.0
        if mode == PREDICT:
            return EstimatorSpec(mode, predictions={"doubled": doubled})
        step = tf.compat.v1.train.get_global_step()
        return EstimatorSpec(mode, loss=tf.reduce_sum(doubled),
                             train_op=tf.compat.v1.assign_add(step, 1))

    estimator = te.Estimator(model_fn, model_dir=str(tmp_path))
    estimator.train(lambda: ({"x": tf.constant([1.0])}, tf.constant([0.0])), steps=1)
    path = estimator.export_saved_model(
        str(tmp_path / "export"),
        te.export.build_raw_serving_input_receiver_fn({"x": tf.constant([1.0])}))
    served = tf.saved_model.load(path.decode()).signatures["serving_default"]
    assert served(x=tf.constant([3.0]))["doubled"].numpy().tolist() == [6.0]
