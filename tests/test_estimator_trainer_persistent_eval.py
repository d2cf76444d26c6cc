"""The persistent Estimator evaluation path against `estimator.evaluate` itself:
the same metrics and the same eval summaries on real checkpoints of the demo's
DNNClassifier, the fallback (with its one log line) where it cannot serve a
case exactly, and the checkpoint errors EstimatorTarget sorts out."""

import glob
import logging
import os
import shutil

import pytest

import trainexec
from fakes import FakeClock
from trainexec.evaluation.target import CheckpointDisappearedError, CorruptCheckpointError

pytestmark = [pytest.mark.estimator, pytest.mark.tf_line]

tf = pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A model directory with the demo DNNClassifier's checkpoints 0, 20, 40."""
    from trainexec.examples import estimator_job as job

    model_dir = str(tmp_path_factory.mktemp("trained"))
    estimator = job.make_estimator(model_dir, save_checkpoints_steps=20)
    estimator.train(job._train_input_fn, max_steps=40)
    return model_dir


def copy_of(trained, tmp_path, name):
    """A copy of the trained model directory (no eval summaries yet)."""
    target = str(tmp_path / name)
    shutil.copytree(trained, target, ignore=shutil.ignore_patterns("eval*", "events*"))
    return target


def demo(model_dir, **spec):
    from trainexec.examples import estimator_job as job

    estimator = job.make_estimator(model_dir, save_checkpoints_steps=20)
    return estimator, trainexec.EvalSpec(job._eval_input_fn, **spec)


def ckpt(model_dir, step):
    return os.path.join(model_dir, f"model.ckpt-{step}")


def events(eval_dir):
    """Every event of the eval directory, without wall times: ("graph", step)
    or ("summary", step, tag, value), the checkpoint path made relative."""
    files = sorted(glob.glob(os.path.join(eval_dir, "events.out.tfevents.*")))
    assert len(files) == 1, files
    found = []
    for event in tf.compat.v1.train.summary_iterator(files[0]):
        if event.HasField("graph_def"):
            found.append(("graph", event.step))
        for value in event.summary.value:
            if value.HasField("tensor"):
                text = tf.make_ndarray(value.tensor).item().decode()
                shown = os.path.basename(text)
            else:
                shown = value.simple_value
            found.append(("summary", event.step, value.tag, shown))
    return found


ORDER = (40, 0, 20, 40)  # out of order and once again: metrics must reset


def evaluate_both(trained, tmp_path, steps=None, name=None, hooks=()):
    """(estimator.evaluate results, persistent results, their eval dirs)."""
    from trainexec.estimator_trainer.persistent_eval import PersistentEvaluation

    theirs_dir, ours_dir = copy_of(trained, tmp_path, "theirs"), copy_of(trained, tmp_path, "ours")
    estimator, spec = demo(theirs_dir, steps=steps, name=name, hooks=list(hooks))
    theirs = [estimator.evaluate(spec.input_fn, steps=steps, hooks=spec.hooks, name=name,
                                 checkpoint_path=ckpt(theirs_dir, step)) for step in ORDER]
    estimator, spec = demo(ours_dir, steps=steps, name=name, hooks=list(hooks))
    persistent = PersistentEvaluation(estimator, spec)
    ours = [persistent.evaluate(ckpt(ours_dir, step)) for step in ORDER]
    persistent.close()
    eval_dir = "eval" if name is None else f"eval_{name}"
    return theirs, ours, os.path.join(theirs_dir, eval_dir), os.path.join(ours_dir, eval_dir)


def test_same_metrics_and_summaries_as_estimator_evaluate(trained, tmp_path):
    theirs, ours, theirs_dir, ours_dir = evaluate_both(trained, tmp_path)
    assert [list(r) for r in ours] == [list(r) for r in theirs]  # keys, in order
    assert ours == theirs
    assert [r["global_step"] for r in ours] == list(ORDER)
    assert {"accuracy", "average_loss", "loss", "global_step"} <= set(ours[0])
    assert ours[0]["accuracy"] > 0.9
    assert events(ours_dir) == events(theirs_dir)
    assert ("summary", 0, "checkpoint_path", "model.ckpt-0") in events(ours_dir)


def test_same_results_for_a_named_evaluation_of_some_steps(trained, tmp_path):
    theirs, ours, theirs_dir, ours_dir = evaluate_both(trained, tmp_path, steps=2,
                                                       name="holdout")
    assert ours == theirs
    assert theirs_dir.endswith("eval_holdout") and events(ours_dir) == events(theirs_dir)


def test_the_eval_input_is_released_when_its_evaluation_ends(trained, tmp_path):
    """The input's iterator ends with its evaluation, as estimator.evaluate's session
    does, not when the next checkpoint comes: on TF 2.15, destroying an iterator that
    sat idle can stall for most of a minute (an autotuning thread that sleeps on)."""
    from trainexec.estimator_trainer.persistent_eval import PersistentEvaluation
    from trainexec.examples import estimator_job as job
    from trainexec.examples.blobs import FEATURES

    released = []

    def batches():  # endless: only the iterator's destruction ends it
        x, y = job.make_data(200, seed=2)
        try:
            while True:
                yield {"x": x[:100]}, y[:100]
        finally:
            released.append(True)

    def input_fn():
        return tf.data.Dataset.from_generator(batches, output_signature=(
            {"x": tf.TensorSpec([None, FEATURES], tf.float32)},
            tf.TensorSpec([None], tf.int64)))

    model_dir = copy_of(trained, tmp_path, "ours")
    estimator = job.make_estimator(model_dir, save_checkpoints_steps=20)
    evaluation = PersistentEvaluation(estimator, trainexec.EvalSpec(input_fn, steps=2))
    try:
        for done, step in enumerate((20, 40), start=1):
            results = evaluation.evaluate(ckpt(model_dir, step))
            assert results["global_step"] == step
            assert len(released) == done, f"input still held after evaluating step {step}"
    finally:
        evaluation.close()


class CountingHook(tf.compat.v1.train.SessionRunHook):
    """Counts sessions, runs and ends; it has no begin()."""

    def __init__(self):
        self.calls = {"after_create_session": 0, "after_run": 0, "end": 0}

    def after_create_session(self, session, coord):
        self.calls["after_create_session"] += 1

    def after_run(self, run_context, run_values):
        self.calls["after_run"] += 1

    def end(self, session):
        self.calls["end"] += 1


def test_eval_hooks_are_honoured(trained, tmp_path):
    theirs_hook, ours_hook = CountingHook(), CountingHook()
    from trainexec.estimator_trainer.persistent_eval import PersistentEvaluation

    theirs_dir, ours_dir = copy_of(trained, tmp_path, "a"), copy_of(trained, tmp_path, "b")
    estimator, spec = demo(theirs_dir, hooks=[theirs_hook])
    theirs = estimator.evaluate(spec.input_fn, hooks=spec.hooks,
                                checkpoint_path=ckpt(theirs_dir, 20))
    estimator, spec = demo(ours_dir, hooks=[ours_hook])
    ours = PersistentEvaluation(estimator, spec).evaluate(ckpt(ours_dir, 20))
    assert ours == theirs
    # 500 examples in batches of 100: 5 runs, and the 6th finds the input exhausted.
    assert ours_hook.calls == theirs_hook.calls == {
        "after_create_session": 1, "after_run": 5, "end": 1}


def test_the_graph_is_built_once_and_does_not_grow(trained, tmp_path):
    from trainexec.estimator_trainer.persistent_eval import PersistentEvaluation

    model_dir = copy_of(trained, tmp_path, "m")
    persistent = PersistentEvaluation(*demo(model_dir))
    persistent.evaluate(ckpt(model_dir, 0))
    ops = len(persistent.graph.get_operations())
    for step in (20, 40, 0, 20):
        persistent.evaluate(ckpt(model_dir, step))
    assert persistent.graph.finalized
    assert len(persistent.graph.get_operations()) == ops


class BeginHook(tf.compat.v1.train.SessionRunHook):
    def begin(self):
        self.began = getattr(self, "began", 0) + 1


def test_a_hook_with_begin_falls_back_with_one_log_line(trained, tmp_path, caplog):
    from trainexec.estimator_trainer.target import EstimatorTarget

    model_dir = copy_of(trained, tmp_path, "m")
    hook = BeginHook()
    estimator, spec = demo(model_dir, hooks=[hook])
    target = EstimatorTarget(estimator, spec)
    with caplog.at_level(logging.INFO, logger="trainexec.estimator_trainer.target"):
        first = target.evaluate(ckpt(model_dir, 20))
        target.evaluate(ckpt(model_dir, 40))
    lines = [r.getMessage() for r in caplog.records
             if r.name == "trainexec.estimator_trainer.target"]
    assert lines == [f"Evaluating {model_dir} with estimator.evaluate, a new graph and "
                     "session per checkpoint: eval hook BeginHook defines begin(), which "
                     "estimator.evaluate calls on a new graph for every checkpoint"]
    assert not target.persistent and hook.began == 2  # estimator.evaluate ran twice
    assert first["global_step"] == 20


def test_a_replaced_model_fn_falls_back_to_estimator_evaluate(trained, tmp_path, caplog):
    from trainexec.estimator_trainer.target import EstimatorTarget

    model_dir = copy_of(trained, tmp_path, "m")
    estimator, spec = demo(model_dir)
    target = EstimatorTarget(estimator, spec)
    before = target.evaluate(ckpt(model_dir, 20))
    assert target.persistent
    original = estimator._model_fn
    calls = []

    def model_fn(features, labels, mode, config):
        calls.append(mode)
        return original(features, labels, mode, config)

    estimator._model_fn = model_fn
    with caplog.at_level(logging.INFO, logger="trainexec.estimator_trainer.target"):
        after = target.evaluate(ckpt(model_dir, 20))
    assert calls == ["eval"] and not target.persistent
    assert after == before
    assert any("model_fn was replaced since the evaluation graph was built" in
               r.getMessage() for r in caplog.records)


def test_turned_off_by_the_environment(trained, tmp_path, monkeypatch, caplog):
    from trainexec.estimator_trainer.target import EstimatorTarget

    monkeypatch.setenv("TRAINEXEC_PERSISTENT_EVAL", "0")
    model_dir = copy_of(trained, tmp_path, "m")
    target = EstimatorTarget(*demo(model_dir))
    with caplog.at_level(logging.INFO, logger="trainexec.estimator_trainer.target"):
        assert target.evaluate(ckpt(model_dir, 20))["global_step"] == 20
    assert not target.persistent
    assert "TRAINEXEC_PERSISTENT_EVAL=0" in caplog.text


def test_a_misspelt_environment_value_names_the_fix():
    from trainexec.estimator_trainer.persistent_eval import persistent_enabled

    with pytest.raises(trainexec.ConfigError, match=r"TRAINEXEC_PERSISTENT_EVAL='no' .*"
                       r"set it to 1 .* or 0 .*or unset it"):
        persistent_enabled({"TRAINEXEC_PERSISTENT_EVAL": "no"})
    assert persistent_enabled({}) and not persistent_enabled(
        {"TRAINEXEC_PERSISTENT_EVAL": "0"})


# ---- checkpoints gone or damaged: the same errors as with estimator.evaluate


def test_a_rotated_out_checkpoint_disappeared(trained, tmp_path):
    from trainexec.estimator_trainer.target import EstimatorTarget

    model_dir = copy_of(trained, tmp_path, "m")
    clock = FakeClock(0.0)
    target = EstimatorTarget(*demo(model_dir), clock=clock)
    target.evaluate(ckpt(model_dir, 20))
    for name in glob.glob(ckpt(model_dir, 40) + ".*"):
        os.remove(name)
    with pytest.raises(CheckpointDisappearedError, match="model.ckpt-40"):
        target.evaluate(ckpt(model_dir, 40))
    assert target.persistent and clock.sleeps == []
    assert target.evaluate(ckpt(model_dir, 0))["global_step"] == 0  # still serving


def test_a_truncated_checkpoint_is_retried_then_corrupt(trained, tmp_path):
    from trainexec.estimator_trainer.target import EstimatorTarget

    model_dir = copy_of(trained, tmp_path, "m")
    clock = FakeClock(0.0)
    target = EstimatorTarget(*demo(model_dir), clock=clock, retry_secs=2.0)
    good = target.evaluate(ckpt(model_dir, 20))
    data = ckpt(model_dir, 40) + ".data-00000-of-00001"
    with open(data, "r+b") as handle:
        handle.truncate(16)
    with pytest.raises(CorruptCheckpointError) as caught:
        target.evaluate(ckpt(model_dir, 40))
    assert isinstance(caught.value.__cause__, (tf.errors.OutOfRangeError,
                                               tf.errors.DataLossError))
    assert target.persistent and clock.sleeps == [2.0]
    assert target.evaluate(ckpt(model_dir, 20)) == good  # nothing left half-restored


# ---- what the persistent path serves, and why not


def _plain_model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    return tf.estimator.EstimatorSpec(mode, loss=loss)


def _model_fn_with_hooks(features, labels, mode):
    spec = _plain_model_fn(features, labels, mode)
    return spec._replace(evaluation_hooks=[CountingHook()])


def _model_fn_with_loss_metric(features, labels, mode):
    spec = _plain_model_fn(features, labels, mode)
    return spec._replace(eval_metric_ops={"loss": tf.compat.v1.metrics.mean(spec.loss)})


def _dataset_input_fn():
    return tf.data.Dataset.from_tensors(({"x": [[1.0, 2.0]]}, [1]))


def _tensor_input_fn():
    return {"x": tf.constant([[1.0, 2.0]])}, tf.constant([1])


def _own_evaluate_class():
    class OwnEvaluate(tf.estimator.Estimator):
        def _assert_members_are_not_overridden(self):
            pass  # allows the override below

        def evaluate(self, *args, **kwargs):
            return super().evaluate(*args, **kwargs)

    return OwnEvaluate


def _estimator(tmp_path, model_fn=_plain_model_fn, cls=None, **config):
    cls = cls or tf.estimator.Estimator
    return cls(model_fn, config=tf.estimator.RunConfig(model_dir=str(tmp_path), **config))


SERVABLE = [  # (case, estimator(tmp_path), eval spec keywords, reason or None)
    ("an Estimator and a Dataset", lambda p: _estimator(p), {}, None),
    ("a hook without begin()", lambda p: _estimator(p), {"hooks": [CountingHook()]}, None),
    ("warm start: never applies to a given checkpoint",
     lambda p: tf.estimator.Estimator(_plain_model_fn, model_dir=str(p),
                                      warm_start_from=str(p)), {}, None),
    ("not an Estimator", lambda p: object(), {}, "object is not a tf.estimator.Estimator"),
    ("a subclass with its own evaluate", lambda p: _estimator(p, cls=_own_evaluate_class()), {},
     "OwnEvaluate overrides Estimator.evaluate"),
    ("eval_distribute", lambda p: _estimator(
        p, eval_distribute=tf.distribute.OneDeviceStrategy("/cpu:0")), {},
     "RunConfig.eval_distribute is set"),
    ("a hook with begin()", lambda p: _estimator(p), {"hooks": [BeginHook()]},
     "eval hook BeginHook defines begin()"),
    ("input_fn returns tensors", lambda p: _estimator(p),
     {"input_fn": _tensor_input_fn}, "input_fn returned a tuple, not a tf.data.Dataset"),
    ("model_fn returns evaluation_hooks", lambda p: _estimator(p, _model_fn_with_hooks),
     {}, "the model_fn returns evaluation_hooks (CountingHook)"),
    ("model_fn defines its own loss metric",
     lambda p: _estimator(p, _model_fn_with_loss_metric), {},
     "the model_fn defines a metric named 'loss'"),
]


@pytest.mark.parametrize("make,spec,reason", [row[1:] for row in SERVABLE],
                         ids=[row[0] for row in SERVABLE])
def test_what_the_persistent_path_serves(tmp_path, make, spec, reason):
    from trainexec.estimator_trainer.persistent_eval import NotServable, PersistentEvaluation

    eval_spec = trainexec.EvalSpec(spec.get("input_fn", _dataset_input_fn),
                                   hooks=spec.get("hooks", ()))
    estimator = make(tmp_path)
    if reason is None:
        PersistentEvaluation(estimator, eval_spec).close()
    else:
        with pytest.raises(NotServable) as caught:
            PersistentEvaluation(estimator, eval_spec)
        assert reason in str(caught.value)


def test_local_mode_evaluates_on_save_through_the_persistent_graph(tmp_path, no_tf_config,
                                                                   caplog):
    from trainexec.examples import estimator_job as job

    model_dir = str(tmp_path / "local")
    estimator = job.make_estimator(model_dir, save_checkpoints_steps=20)
    train_spec = trainexec.TrainSpec(job._train_input_fn, max_steps=40)
    eval_spec = trainexec.EvalSpec(job._eval_input_fn, throttle_secs=0)
    with caplog.at_level(logging.INFO):
        metrics, _ = trainexec.train_and_evaluate(estimator, train_spec, eval_spec)
    served = [r.getMessage() for r in caplog.records
              if r.name == "trainexec.estimator_trainer.persistent_eval"]
    assert [line.split(":")[0] for line in served] == [
        "Saving dict for global step 20", "Saving dict for global step 40"]
    assert not [r for r in caplog.records  # no fallback
                if r.name == "trainexec.estimator_trainer.target"]
    assert metrics == estimator.evaluate(eval_spec.input_fn,
                                         checkpoint_path=ckpt(model_dir, 40))
