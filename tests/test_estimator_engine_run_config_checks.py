"""RunConfig's value rules: one row per bad value, asserting the ValueError, tf.estimator's
words and trainexec's fix; how often checkpoints are saved, built and replaced; model_dir
given in the constructor and in TF_CONFIG."""

import pathlib

import pytest
import tensorflow as tf

from trainexec.errors import ConfigError
from trainexec.estimator_engine.run_config_checks import (
    DEFAULT_SAVE_SECS, FIELD_RULES, USE_DEFAULT, check_fields, constructor_saving,
    replaced_saving, resolve_model_dir)

pytestmark = pytest.mark.tf_line

# (field, bad value, tf.estimator's words, trainexec's fix)
BAD_VALUES = [
    ("model_dir", "", "model_dir should be non-empty.", "or None for a temporary one"),
    ("save_summary_steps", -1, "save_summary_steps should be >= 0.", "0 or None for no"),
    ("save_summary_steps", "100", "save_summary_steps should be >= 0.", "whole number"),
    ("save_checkpoints_steps", -1, "save_checkpoints_steps should be >= 0.",
     "None to save by time"),
    ("save_checkpoints_steps", 1.5, "save_checkpoints_steps should be >= 0.", "whole number"),
    ("save_checkpoints_secs", -1, "save_checkpoints_secs should be >= 0.",
     "None to save by steps"),
    ("session_config", {}, "session_config must be instance of ConfigProto.",
     "tf.compat.v1.ConfigProto"),
    ("keep_checkpoint_max", -1, "keep_checkpoint_max should be >= 0.", "keep them all"),
    ("keep_checkpoint_every_n_hours", 0, "keep_checkpoint_every_n_hours should be > 0.",
     "number of hours"),
    ("log_step_count_steps", 0, "log_step_count_steps should be > 0.", "None for no step-rate"),
    ("tf_random_seed", 1.0, "tf_random_seed must be integer.", "an int such as 42"),
    ("tf_random_seed", True, "tf_random_seed must be integer.", "an int such as 42"),
    ("experimental_max_worker_delay_secs", "5",
     "experimental_max_worker_delay_secs must be an integer if set.", "whole number"),
    ("experimental_max_worker_delay_secs", 2.5,
     "experimental_max_worker_delay_secs must be an integer if set.", "whole number"),
    ("session_creation_timeout_secs", 0, "session_creation_timeout_secs should be > 0.",
     "default 7200"),
    ("device_fn", lambda x, y: 0, 'device_fn must be callable with exactly one argument "op".',
     "a function of the op"),
    ("device_fn", lambda x: "/cpu:0", 'device_fn must be callable with exactly one argument '
     '"op".', "lambda op: '/cpu:0'"),
    ("device_fn", "/cpu:0", 'device_fn must be callable with exactly one argument "op".',
     "a function of the op"),
    ("protocol", "http", "protocol should be grpc or grpc+verbs.", "None for grpc"),
]


@pytest.mark.parametrize("field, value, tf_words, fix", BAD_VALUES,
                         ids=[f"{row[0]}={row[1].__name__ if callable(row[1]) else row[1]!r}"
                              for row in BAD_VALUES])
def test_a_bad_value_is_refused_with_tf_estimators_words_the_value_and_the_fix(
        field, value, tf_words, fix):
    with pytest.raises(ValueError) as raised:
        check_fields({field: value}, where="RunConfig.replace")
    message = str(raised.value)
    assert message.startswith(f"{tf_words} RunConfig.replace({field}={value!r}): ")
    assert fix in message


def test_every_field_has_a_bad_value_row():
    assert {rule.field for rule in FIELD_RULES} == {row[0] for row in BAD_VALUES}


GOOD_VALUES = dict(model_dir="gs://bucket/m", save_summary_steps=0, save_checkpoints_steps=0,
                   save_checkpoints_secs=0.5, keep_checkpoint_max=0,
                   keep_checkpoint_every_n_hours=0.5, log_step_count_steps=1,
                   tf_random_seed=0, experimental_max_worker_delay_secs=0,
                   session_creation_timeout_secs=1.5, device_fn=lambda op: "/cpu:0",
                   protocol="grpc+verbs",
                   session_config=tf.compat.v1.ConfigProto(allow_soft_placement=True))


def test_good_values_and_none_pass():
    check_fields(GOOD_VALUES)
    check_fields(dict.fromkeys(GOOD_VALUES))


@pytest.mark.parametrize("steps, secs, expected", [
    (USE_DEFAULT, USE_DEFAULT, (None, DEFAULT_SAVE_SECS)),   # every 600 s
    (100, USE_DEFAULT, (100, None)),
    (USE_DEFAULT, 60, (None, 60)),
    (None, USE_DEFAULT, (None, None)),                        # no checkpoints
    (None, None, (None, None)),
])
def test_the_constructor_saves_by_one_measure(steps, secs, expected):
    assert constructor_saving(steps, secs) == expected


def test_the_constructor_refuses_both_measures():
    with pytest.raises(ValueError, match=r"^`save_checkpoints_steps` and `save_checkpoints_"
                       r"secs` cannot be both set\. RunConfig\(save_checkpoints_steps=100, "
                       r"save_checkpoints_secs=200\): give one of them"):
        constructor_saving(100, 200)


@pytest.mark.parametrize("before, changes, after", [
    ((None, 600), dict(save_checkpoints_steps=100), (100, None)),
    ((100, None), dict(save_checkpoints_secs=200), (None, 200)),
    ((None, 600), dict(save_checkpoints_secs=None), (None, None)),
    ((100, None), dict(save_checkpoints_steps=None), (None, None)),
    ((None, 600), dict(save_checkpoints_steps=None, save_checkpoints_secs=None), (None, None)),
    ((None, 600), dict(save_checkpoints_steps=5, save_checkpoints_secs=None), (5, None)),
    ((None, 600), dict(tf_random_seed=1), (None, 600)),
])
def test_replacing_one_measure_turns_the_other_off(before, changes, after):
    assert replaced_saving(*before, changes) == after


def test_replacing_both_measures_is_refused():
    with pytest.raises(ValueError, match=r"^`save_checkpoints_steps` and `save_checkpoints_"
                       r"secs` cannot be both set\. RunConfig\.replace\(.*\): replace one"):
        replaced_saving(None, 600, dict(save_checkpoints_steps=100, save_checkpoints_secs=200))


@pytest.mark.parametrize("given, tf_config, expected", [
    (None, {}, None),
    ("/tmp/a", {}, "/tmp/a"),
    (pathlib.Path("/tmp/a"), {}, "/tmp/a"),
    (None, {"model_dir": "/tmp/b"}, "/tmp/b"),
    ("/tmp/b", {"model_dir": "/tmp/b"}, "/tmp/b"),
    ("/tmp/b/", {"model_dir": "/tmp/b"}, "/tmp/b/"),    # the same directory
])
def test_model_dir_comes_from_the_constructor_or_tf_config(given, tf_config, expected):
    assert resolve_model_dir(given, tf_config) == expected


@pytest.mark.parametrize("given, tf_config, error, tf_words, fix", [
    ("", {}, ValueError, "model_dir should be non-empty. ", "None for a temporary one"),
    (None, {"model_dir": ""}, ConfigError, "model_dir in TF_CONFIG should be non-empty. ",
     'leave "model_dir" out'),
    ("/tmp/456", {"model_dir": "/tmp/123"}, ConfigError,
     "`model_dir` provided in RunConfig construct, if set, must have the same value as the "
     "model_dir in TF_CONFIG. ",
     "RunConfig(model_dir='/tmp/456') but TF_CONFIG has \"model_dir\": '/tmp/123'"),
    (None, {"model_dir": 7}, ConfigError, "TF_CONFIG model_dir is 7", "a directory"),
])
def test_model_dir_rows(given, tf_config, error, tf_words, fix):
    with pytest.raises(error) as raised:
        resolve_model_dir(given, tf_config)
    assert str(raised.value).startswith(tf_words) and fix in str(raised.value)
