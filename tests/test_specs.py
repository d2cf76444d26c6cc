"""TrainSpec / EvalSpec validation: one row per bad input, tf.estimator specs accepted."""

import collections

import pytest
import tensorflow as tf

from trainexec.specs import EvalSpec, TrainSpec, as_eval_spec, as_train_spec
from fakes import RecordingExporter

pytestmark = pytest.mark.tf_line


def input_fn():
    return None


class Hook(tf.compat.v1.train.SessionRunHook):
    pass


def test_defaults_are_tf_estimators():
    # The values tf.estimator 2.15 uses (test_defaults_match_tf_estimator checks
    # them against it where it exists).
    assert tuple(EvalSpec(input_fn)) == (input_fn, 100, None, (), (), 120, 600)
    assert TrainSpec(input_fn) == (input_fn, None, (), ())
    exporter = RecordingExporter("best")
    assert EvalSpec(input_fn, exporters=exporter).exporters == (exporter,)


def test_lookalike_specs_convert():
    """Any object with the spec fields converts, as tf.estimator's specs do."""
    TheirTrain = collections.namedtuple("TrainSpec", "input_fn max_steps hooks")
    TheirEval = collections.namedtuple("EvalSpec", EvalSpec._fields)
    train = as_train_spec(TheirTrain(input_fn, 7, [Hook()]))
    assert isinstance(train, TrainSpec) and train.max_steps == 7 and len(train.hooks) == 1
    assert train.saving_listeners == ()
    spec = as_eval_spec(TheirEval(input_fn, 3, "held_out", None, None, 0, 0))
    assert isinstance(spec, EvalSpec)
    assert (spec.steps, spec.name, spec.throttle_secs) == (3, "held_out", 0)
    with pytest.raises(ValueError, match="steps > 0, given: 0"):
        as_eval_spec(TheirEval(input_fn, 0, None, None, None, 0, 0))  # still validated


@pytest.mark.estimator
def test_defaults_match_tf_estimator():
    ours, theirs = EvalSpec(input_fn), tf.estimator.EvalSpec(input_fn)
    assert ours._fields == theirs._fields
    assert tuple(ours) == tuple(theirs)
    assert TrainSpec(input_fn) == (input_fn, None, (), ())


@pytest.mark.estimator
def test_tf_estimator_specs_convert():
    exporter = RecordingExporter("best")
    train = as_train_spec(tf.estimator.TrainSpec(input_fn, max_steps=7, hooks=[Hook()]))
    assert isinstance(train, TrainSpec) and train.max_steps == 7 and len(train.hooks) == 1
    spec = as_eval_spec(tf.estimator.EvalSpec(input_fn, steps=3, throttle_secs=0))
    assert isinstance(spec, EvalSpec) and (spec.steps, spec.throttle_secs) == (3, 0)
    assert EvalSpec(input_fn, exporters=exporter).exporters == (exporter,)


BAD_TRAIN = [
    (dict(input_fn=3), TypeError, "`input_fn` must be callable"),
    (dict(input_fn=input_fn, max_steps=0), ValueError, "max_steps > 0, given: 0"),
    (dict(input_fn=input_fn, max_steps="10"), TypeError, "`max_steps` must be a number"),
    (dict(input_fn=input_fn, hooks=[object()]), TypeError, "SessionRunHook"),
    (dict(input_fn=input_fn, saving_listeners=[Hook()]), TypeError,
     "CheckpointSaverListener"),
]


@pytest.mark.parametrize("kwargs,error,words", BAD_TRAIN)
def test_bad_train_spec(kwargs, error, words):
    with pytest.raises(error, match=words):
        TrainSpec(**kwargs)


BAD_EVAL = [
    (dict(input_fn=None), TypeError, "`input_fn` must be callable"),
    (dict(steps=0), ValueError, "steps > 0, given: 0"),
    (dict(name=3), TypeError, "`name` must be string"),
    (dict(hooks=["x"]), TypeError, "SessionRunHook"),
    (dict(start_delay_secs=-1), ValueError, "start_delay_secs >= 0"),
    (dict(throttle_secs=-1), ValueError, "throttle_secs >= 0"),
    (dict(exporters=3), TypeError, "`exporters` must be an Exporter"),
    (dict(exporters=[RecordingExporter("a"), object()]), TypeError,
     "`exporters` must be an Exporter"),
    (dict(exporters=[RecordingExporter("")]), ValueError, "cannot have a name"),
    (dict(exporters=[RecordingExporter(5)]), ValueError, "must have a string name"),
    (dict(exporters=[RecordingExporter("a"), RecordingExporter("a")]), ValueError,
     "unique names"),
    (dict(exporters=[RecordingExporter("../escape")]), ValueError,
     "single directory name"),
    (dict(exporters=[RecordingExporter("..")]), ValueError, "single directory name"),
    (dict(exporters=[RecordingExporter("a/b")]), ValueError, "single directory name"),
]


@pytest.mark.parametrize("kwargs,error,words", BAD_EVAL)
def test_bad_eval_spec(kwargs, error, words):
    kwargs = {"input_fn": input_fn, **kwargs}
    with pytest.raises(error, match=words):
        EvalSpec(**kwargs)


def test_not_a_spec():
    with pytest.raises(TypeError, match="`eval_spec` must be"):
        as_eval_spec("eval")
    with pytest.raises(TypeError, match="`train_spec` must be"):
        as_train_spec(None)
