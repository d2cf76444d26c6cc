"""trainexec.estimator.Estimator on real checkpoints, events and SavedModels, on every
TensorFlow line (a model with plain variables; the tf.compat.v1.layers model where
Keras 2 serves those layers)."""

import glob
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import trainexec
import trainexec.estimator as te
from engine_models import (data, eval_input_fn, make_model_fn, predict_input_fn,
                           serving_input_receiver_fn_for, train_input_fn)

pytestmark = pytest.mark.tf_line


def make(model_dir, layers=False, **config):
    config.setdefault("save_checkpoints_steps", 50)
    config.setdefault("tf_random_seed", 3)
    return te.Estimator(make_model_fn(te, layers), model_dir=str(model_dir),
                        params={"lr": 0.05}, config=te.RunConfig(**config))


def event_tags(directory):
    tags = set()
    for path in glob.glob(os.path.join(directory, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(value.tag for value in event.summary.value)
    return tags


def test_train_evaluate_predict_export_round_trip(tmp_path, no_tf_config):
    estimator = make(tmp_path)
    assert estimator.train(train_input_fn, max_steps=120) is estimator
    latest = estimator.latest_checkpoint()
    assert latest == str(tmp_path / "model.ckpt-120")
    # tf.estimator's checkpoint state file and names.
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert os.path.basename(state.model_checkpoint_path) == "model.ckpt-120"
    assert set(estimator.get_variable_names()) == {
        "global_step", "beta1_power", "beta2_power",
        *(f"{layer}/{part}{slot}" for layer in ("hidden", "logits")
          for part in ("kernel", "bias") for slot in ("", "/Adam", "/Adam_1"))}
    assert estimator.get_variable_value("global_step") == 120
    # Training events for TensorBoard: the loss and the step rate.
    assert {"loss", "global_step/sec"} <= event_tags(str(tmp_path))

    metrics = estimator.evaluate(eval_input_fn)
    assert metrics["global_step"] == 120
    assert metrics["accuracy"] > 0.9 and metrics["loss"] < 0.4
    assert {"accuracy", "loss"} <= event_tags(str(tmp_path / "eval"))

    predictions = list(estimator.predict(predict_input_fn))
    assert len(predictions) == 7 and set(predictions[0]) == {"class", "probabilities"}
    only = list(estimator.predict(predict_input_fn, predict_keys=["class"]))
    assert [p["class"] for p in only] == [p["class"] for p in predictions]
    batches = list(estimator.predict(predict_input_fn, yield_single_examples=False))
    assert [len(b["class"]) for b in batches] == [4, 3]

    path = estimator.export_saved_model(str(tmp_path / "export"),
                                        serving_input_receiver_fn_for(te))
    assert isinstance(path, bytes) and os.path.dirname(path) == str(tmp_path / "export").encode()
    served = tf.saved_model.load(path.decode()).signatures["serving_default"](
        x=tf.constant(data(7, 3)[0]))
    np.testing.assert_array_equal(served["class"].numpy(), [p["class"] for p in predictions])
    np.testing.assert_allclose(served["probabilities"].numpy(),
                               [p["probabilities"] for p in predictions], atol=1e-6)
    # A second export in the same second never overwrites the first.
    again = estimator.export_saved_model(str(tmp_path / "export"),
                                         serving_input_receiver_fn_for(te))
    assert again != path and os.path.isdir(path) and os.path.isdir(again)


def test_train_resumes_from_its_checkpoint_and_skips_a_reached_max_steps(tmp_path,
                                                                         no_tf_config):
    make(tmp_path).train(train_input_fn, max_steps=60)
    estimator = make(tmp_path)
    estimator.train(train_input_fn, steps=40)
    assert estimator.get_variable_value("global_step") == 100
    before = os.path.getmtime(estimator.latest_checkpoint() + ".index")
    estimator.train(train_input_fn, max_steps=80)  # already past: nothing runs
    assert estimator.latest_checkpoint().endswith("model.ckpt-100")
    assert os.path.getmtime(estimator.latest_checkpoint() + ".index") == before


def test_evaluate_a_named_evaluation_and_a_given_checkpoint(tmp_path, no_tf_config):
    estimator = make(tmp_path, keep_checkpoint_max=10)
    estimator.train(train_input_fn, max_steps=100)
    early = estimator.evaluate(eval_input_fn, checkpoint_path=str(tmp_path / "model.ckpt-50"),
                               name="early", steps=2)
    assert early["global_step"] == 50
    assert os.path.isdir(estimator.eval_dir("early")) and estimator.eval_dir(
        "early").endswith("eval_early")
    # One persistent graph gives what evaluate gives, checkpoint after checkpoint.
    evaluation = estimator.persistent_evaluation(eval_input_fn)
    try:
        for step in (50, 100):
            path = str(tmp_path / f"model.ckpt-{step}")
            assert evaluation.evaluate(path) == pytest.approx(
                estimator.evaluate(eval_input_fn, checkpoint_path=path), abs=1e-6)
    finally:
        evaluation.close()


def test_warm_start_takes_another_runs_variables(tmp_path, no_tf_config):
    make(tmp_path / "first").train(train_input_fn, max_steps=50)
    second = te.Estimator(make_model_fn(te), model_dir=str(tmp_path / "second"),
                          params={"lr": 0.0}, warm_start_from=te.WarmStartSettings(
                              str(tmp_path / "first"), vars_to_warm_start="hidden.*"),
                          config=te.RunConfig(save_checkpoints_steps=50))
    second.train(train_input_fn, steps=1)
    first = te.Estimator(make_model_fn(te), model_dir=str(tmp_path / "first"),
                         params={"lr": 0.05})
    np.testing.assert_array_equal(second.get_variable_value("hidden/kernel"),
                                  first.get_variable_value("hidden/kernel"))
    assert not np.array_equal(second.get_variable_value("logits/kernel"),
                              first.get_variable_value("logits/kernel"))


def test_train_and_evaluate_locally_with_the_three_exporters(tmp_path, no_tf_config):
    receiver = serving_input_receiver_fn_for(te)
    estimator = make(tmp_path, save_checkpoints_steps=40)
    metrics, exports = te.train_and_evaluate(
        estimator, te.TrainSpec(train_input_fn, max_steps=120),
        te.EvalSpec(eval_input_fn, throttle_secs=0, exporters=[
            te.FinalExporter("final", receiver), te.LatestExporter("latest", receiver,
                                                                   exports_to_keep=2),
            te.BestExporter("best", receiver)]))
    assert metrics["global_step"] == 120
    assert len(glob.glob(str(tmp_path / "export/final/[0-9]*"))) == 1
    assert 1 <= len(glob.glob(str(tmp_path / "export/latest/[0-9]*"))) <= 2
    assert glob.glob(str(tmp_path / "export/best/[0-9]*"))
    assert (tmp_path / "export/best/best.json").exists()
    assert trainexec.train_and_evaluate is te.train_and_evaluate


@pytest.mark.keras
def test_a_model_fn_of_tf_compat_v1_layers(tmp_path, no_tf_config):
    try:
        tf.compat.v1.layers.dense
    except AttributeError as why:  # Keras 3: tf.compat.v1.layers needs tf_keras
        pytest.skip(f"tf.compat.v1.layers is not served here ({why}); run with "
                    "TF_USE_LEGACY_KERAS=1 and tf_keras (test line 2)")
    estimator = make(tmp_path, layers=True)
    estimator.train(train_input_fn, max_steps=100)
    assert "hidden/kernel" in estimator.get_variable_names()
    assert estimator.evaluate(eval_input_fn)["accuracy"] > 0.9


def test_sessions_place_softly_unless_the_run_config_gives_a_session_config(tmp_path,
                                                                            no_tf_config):
    # As tf.estimator: RunConfig().session_config is None, the Estimator's is the default.
    config = make(tmp_path).config.session_config
    assert config.allow_soft_placement
    assert config.graph_options.rewrite_options.meta_optimizer_iterations == 1  # ONE
    given = tf.compat.v1.ConfigProto(log_device_placement=True)
    assert make(tmp_path, session_config=given).config.session_config is given


def test_importing_it_loads_neither_tensorflow_nor_tensorflow_estimator():
    code = ("import sys, trainexec, trainexec.estimator as e; e.__all__; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'tensorflow_estimator')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
    code = ("import sys, trainexec.estimator as e; e.Estimator; e.export.PredictOutput; "
            "print('tensorflow_estimator' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "False"


def test_the_engine_uses_public_tensorflow_only():
    import trainexec.estimator_engine as engine

    folder = os.path.dirname(engine.__file__)
    found = []
    for path in glob.glob(os.path.join(folder, "**", "*.py"), recursive=True):
        if os.path.join(folder, "compat") in path:  # private Keras, inventoried:
            continue  # tests/test_estimator_engine_compat.py
        for number, line in enumerate(open(path), 1):
            code = line.split("#")[0]
            if "tensorflow.python" in code or "_pywrap" in code or \
                    "keras.src" in code or ".__dict__" in code:
                found.append(f"{os.path.relpath(path, folder)}:{number}: {line.strip()}")
    assert found == []


class CountingHook(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        self.calls = {"begin": 0, "after_run": 0, "end": 0}

    def begin(self):
        self.calls["begin"] += 1

    def after_run(self, run_context, run_values):
        self.calls["after_run"] += 1

    def end(self, session):
        self.calls["end"] += 1


def test_arguments_and_hooks_reach_the_users_functions(tmp_path, no_tf_config):
    seen = {}
    from_spec = CountingHook()
    inner = make_model_fn(te)

    def input_fn(mode, params, config):
        seen["input"] = (mode, params["lr"], config.model_dir)
        return train_input_fn()

    def model_fn(features, labels, mode, params, config):
        seen.setdefault("modes", []).append(mode)
        spec = inner(features, labels, mode, params)
        if mode == te.ModeKeys.TRAIN:
            return spec._replace(training_hooks=(from_spec,))
        return spec

    estimator = te.Estimator(model_fn, model_dir=str(tmp_path), params={"lr": 0.05})
    estimator.train(input_fn, steps=7)
    assert seen["input"] == (te.ModeKeys.TRAIN, 0.05, str(tmp_path))
    assert from_spec.calls == {"begin": 1, "after_run": 7, "end": 1}
    eval_hook = CountingHook()
    estimator.evaluate(eval_input_fn, hooks=[eval_hook])
    assert eval_hook.calls == {"begin": 1, "after_run": 4, "end": 1}  # 200 examples / 50
    predict_hook = CountingHook()
    assert len(list(estimator.predict(predict_input_fn, hooks=[predict_hook]))) == 7
    assert predict_hook.calls["after_run"] == 2 and seen["modes"] == [
        te.ModeKeys.TRAIN, te.ModeKeys.EVAL, te.ModeKeys.PREDICT]


def test_without_a_checkpoint_evaluate_and_predict_use_initial_values(tmp_path, no_tf_config,
                                                                       caplog):
    estimator = make(tmp_path)
    metrics = estimator.evaluate(eval_input_fn)
    assert metrics["global_step"] == 0 and 0.0 <= metrics["accuracy"] <= 1.0
    assert len(list(estimator.predict(predict_input_fn))) == 7
    assert estimator.latest_checkpoint() is None
    with pytest.raises(ValueError, match="no checkpoint"):
        estimator.get_variable_names()


def counting_model_fn(x_initial=1.0, predictions=None, scaffold=None, hooks=()):
    """A model with one variable `x`, counting steps over its input (until it ends);
    predicts `x + 1` (or `predictions`)."""

    def model_fn(features, labels, mode):
        x = tf.compat.v1.get_variable("x", initializer=x_initial)
        step = tf.compat.v1.train.get_global_step()
        return te.EstimatorSpec(
            mode, loss=tf.reduce_mean(features["x"]), train_op=tf.compat.v1.assign_add(step, 1),
            predictions=predictions() if predictions else tf.reshape(x + 1.0, [1, 1]),
            eval_metric_ops={"x": tf.compat.v1.metrics.mean(x)},
            scaffold=scaffold() if scaffold else None, training_hooks=hooks.get("worker", ())
            if hooks else (), training_chief_hooks=hooks.get("chief", ()) if hooks else ())

    return model_fn


def one_example():
    return tf.data.Dataset.from_tensors(({"x": [[1.0]]}, [[1.0]]))


def serving_input_receiver_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 1], name="input_x")
    return te.export.ServingInputReceiver({"x": x}, {"x": x})


def test_model_fn_is_bound_to_the_params(tmp_path, no_tf_config):
    seen = {}

    def model_fn(features, labels, mode, params, config):
        seen.update(params=params, config=config)
        return "called"

    estimator = te.Estimator(model_fn, model_dir=str(tmp_path), params={"units": 3})
    bound = estimator.model_fn
    assert list(inspect.signature(bound).parameters) == ["features", "labels", "mode", "config"]
    with pytest.raises(ValueError, match="model_fn should return an EstimatorSpec"):
        bound({"x": 1}, None, te.ModeKeys.TRAIN, estimator.config)
    assert seen["params"] == {"units": 3} and seen["config"].model_dir == str(tmp_path)


def test_the_given_config_class_reaches_the_model_fn(tmp_path, no_tf_config):
    class OwnConfig(te.RunConfig):
        pass

    config = OwnConfig(save_checkpoints_steps=5)
    config.experiment = "a"
    seen = {}
    inner = counting_model_fn()

    def model_fn(features, labels, mode, config):
        seen["config"] = config
        return inner(features, labels, mode)

    estimator = te.Estimator(model_fn, config=config)  # a temporary model_dir
    estimator.train(one_example)
    assert isinstance(estimator.config, OwnConfig) and estimator.config.model_dir
    assert isinstance(seen["config"], OwnConfig) and seen["config"].experiment == "a"


def test_training_chief_hooks_run_on_the_chief_only(tmp_path, no_tf_config, monkeypatch):
    def initialized_session(self, master, config=None, max_wait_secs=None):
        session = tf.compat.v1.Session(master, config=config)  # no chief here to wait for
        session.run(tf.compat.v1.train.Scaffold().finalize().init_op)
        return session

    monkeypatch.setattr(tf.compat.v1.train.SessionManager, "wait_for_session",
                        initialized_session)

    class NonChief(te.RunConfig):
        is_chief = property(lambda self: False)

    for config, chief_begun in ((te.RunConfig(), 1), (NonChief(), 0)):
        chief, worker = CountingHook(), CountingHook()
        estimator = te.Estimator(
            counting_model_fn(hooks={"chief": [chief], "worker": [worker]}),
            model_dir=str(tmp_path / str(chief_begun)), config=config)
        estimator.train(one_example)
        assert chief.calls["begin"] == chief_begun and worker.calls["begin"] == 1


def test_a_callers_hook_sees_the_nan_step_before_training_stops(tmp_path, no_tf_config):
    def nan_model_fn(mode, features, labels):
        step = tf.compat.v1.train.get_global_step()
        increment = tf.compat.v1.assign_add(step, 1)
        loss = tf.cond(increment > 1, lambda: tf.constant(np.nan), lambda: tf.constant(1.0))
        return te.EstimatorSpec(mode, loss=loss, train_op=increment)

    hook = CountingHook()
    estimator = te.Estimator(nan_model_fn, model_dir=str(tmp_path))
    with pytest.raises(te.NanLossDuringTrainingError):
        estimator.train(lambda: ({}, None), steps=5, hooks=[hook])
    assert hook.calls["after_run"] == 2  # the NaN step's included


class Net(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable([[0.5]], name="w")

    def __call__(self, x):
        return tf.matmul(x, self.w)


def object_based_model_fn(features, labels, mode):
    """TensorFlow's Estimator guide's way to object-based checkpoints: a
    tf.train.Checkpoint as the Scaffold's saver."""
    net, step = Net(), tf.compat.v1.train.get_global_step()
    scaffold = tf.compat.v1.train.Scaffold(saver=tf.train.Checkpoint(step=step, net=net))
    output = net(features["x"])
    if mode == te.ModeKeys.PREDICT:
        return te.EstimatorSpec(mode, predictions=output, scaffold=scaffold)
    loss = tf.reduce_mean(tf.abs(output - labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, step)
    return te.EstimatorSpec(mode, loss=loss, train_op=train_op, scaffold=scaffold)


def test_a_tf_train_checkpoint_as_saver_writes_object_based_checkpoints(tmp_path,
                                                                        no_tf_config):
    def doubling():
        x = np.arange(1, 9, dtype="float32").reshape(-1, 1)
        return tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x)).repeat().batch(4)

    estimator = te.Estimator(object_based_model_fn, model_dir=str(tmp_path),
                             config=te.RunConfig(save_checkpoints_steps=10))
    estimator.train(doubling, steps=10)
    assert "net/w/.ATTRIBUTES/VARIABLE_VALUE" in estimator.get_variable_names()
    estimator.train(doubling, steps=10)  # resumes from the object-based checkpoint
    assert estimator.latest_checkpoint().endswith("model.ckpt-20")
    net = Net()  # what the Checkpoint API reads back, eagerly
    tf.train.Checkpoint(net=net).restore(estimator.latest_checkpoint()).expect_partial()
    assert estimator.evaluate(doubling, steps=1)["global_step"] == 20
    predicted = next(estimator.predict(lambda: tf.data.Dataset.from_tensors({"x": [[1.0]]})))
    np.testing.assert_allclose(predicted, net.w.numpy()[0], rtol=1e-6)
    path = estimator.export_saved_model(str(tmp_path / "export"), serving_input_receiver_fn)
    served = tf.saved_model.load(path.decode()).signatures["serving_default"](
        x=tf.constant([[1.0]]))
    np.testing.assert_allclose(served["output"].numpy(), net.w.numpy(), rtol=1e-6)


def test_a_saver_of_ones_own_saves_and_restores(tmp_path, no_tf_config):
    calls = []

    class OwnSaver:  # not a tf.compat.v1.train.Saver: anything that saves and restores
        def __init__(self):
            self._saver = tf.compat.v1.train.Saver()
            self.saver_def = self._saver.saver_def

        def save(self, session, path, **kwargs):
            calls.append("save")
            return self._saver.save(session, path, **kwargs)

        def restore(self, session, path):
            calls.append("restore")
            self._saver.restore(session, path)

        def build(self):
            pass

    estimator = te.Estimator(counting_model_fn(x_initial=4.0, scaffold=lambda: tf.compat.v1
                                               .train.Scaffold(saver=OwnSaver())),
                             model_dir=str(tmp_path))
    estimator.train(one_example)
    assert calls == ["save", "save"] and estimator.get_variable_value("x") == 4.0
    assert estimator.evaluate(one_example)["x"] == 4.0
    assert next(estimator.predict(one_example)) == [5.0]
    estimator.export_saved_model(str(tmp_path / "export"), serving_input_receiver_fn)
    assert calls[2:] == ["restore"] * 3


def test_warm_start_from_a_saved_model_before_any_training(tmp_path, no_tf_config):
    first = te.Estimator(counting_model_fn(x_initial=42.0), model_dir=str(tmp_path / "first"))
    first.train(lambda: one_example().repeat(), steps=5)
    export = first.export_saved_model(str(tmp_path / "export"), serving_input_receiver_fn)
    # A SavedModel (its path as bytes, as returned), a model_dir.
    for index, source in enumerate((export, first.model_dir)):
        warm = te.Estimator(counting_model_fn(x_initial=36.0), warm_start_from=source,
                            model_dir=str(tmp_path / f"warm{index}"))
        # Not trained: evaluating, predicting and exporting take warm_start_from's values.
        assert warm.evaluate(one_example)["x"] == 42.0
        assert next(warm.predict(one_example)) == [43.0]
        path = warm.export_saved_model(str(tmp_path / "export2"), serving_input_receiver_fn)
        assert tf.train.load_variable(os.path.join(path.decode(), "variables", "variables"),
                                      "x") == 42.0
        warm.train(lambda: one_example().repeat(), steps=1)
        assert warm.get_variable_value("x") == 42.0
        assert warm.get_variable_value("global_step") == 1  # the step is not warm-started


def test_predict_keys_keep_the_named_predictions(tmp_path, no_tf_config):
    estimator = te.Estimator(counting_model_fn(predictions=lambda: {
        "y1": tf.constant([[10.0]]), "y2": tf.constant([[12.0]])}), model_dir=str(tmp_path))
    assert next(estimator.predict(one_example, predict_keys=["y1", "y3"])) == {"y1": [10.0]}
    assert next(estimator.predict(one_example, predict_keys="y2")) == {"y2": [12.0]}
