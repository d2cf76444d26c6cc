"""Warm starting: `WarmStartSettings`' defaults and refusals, what `warm_start_from`
may be (a checkpoint, a model_dir, a SavedModel directory), which checkpoint a model_dir
gives, and `warm_start` itself: checkpoints written by a tf.compat.v1 Saver (and a v1
SavedModel) into tmp_path, read into a new graph's initial values, by name, renamed and
with a vocabulary remapped."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from trainexec.estimator_engine.warm_start import (
    WarmStartSettings, as_warm_start_settings, warm_start, warm_start_checkpoint)

pytestmark = pytest.mark.tf_line

SAVED = {"dense/kernel": [[1.0, 2.0], [3.0, 4.0]], "dense/bias": [5.0, 6.0],
         "embedding": [[10.0, 11.0], [20.0, 21.0], [30.0, 31.0]], "counter": 7.0}


def _variables(values):
    """tf.compat.v1 variables named as `values`' keys ("counter" not trainable)."""
    return {name: tf.compat.v1.get_variable(
        name, initializer=tf.constant(value, tf.float32), trainable=name != "counter")
        for name, value in values.items()}


def _save(directory, values=SAVED, step=3):
    """A model_dir holding one checkpoint of `values`; its path."""
    with tf.Graph().as_default():
        _variables(values)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return saver.save(session, str(directory / "model.ckpt"), global_step=step)


def _warm_values(settings, initial):
    """The initial values of variables like `initial`, warm-started by `settings`."""
    with tf.Graph().as_default():
        variables = _variables(initial)
        warm_start(settings)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return session.run(variables)


def _zeros_like(values):
    return {name: np.zeros_like(value) for name, value in values.items()}


def test_settings_default_to_every_trainable_variable_unchanged():
    settings = WarmStartSettings(pathlib.Path("/runs/previous"))
    assert settings == ("/runs/previous", ".*", {}, {})
    assert isinstance(settings.ckpt_to_initialize_from, str)
    assert WarmStartSettings(b"/runs/b").ckpt_to_initialize_from == "/runs/b"
    for empty in ("", None, b""):
        with pytest.raises(ValueError, match="`ckpt_to_initialize_from` MUST be set"):
            WarmStartSettings(empty)


def test_warm_start_from_may_be_a_path_or_settings():
    settings = WarmStartSettings("/runs/a", vars_to_warm_start="dense.*")
    assert as_warm_start_settings(settings) is settings
    assert as_warm_start_settings(None) is None
    for given in ("/runs/a", b"/runs/a", pathlib.Path("/runs/a")):
        assert as_warm_start_settings(given) == ("/runs/a", ".*", {}, {})
    with pytest.raises(ValueError, match="`warm_start_from` is empty"):
        as_warm_start_settings("")
    with pytest.raises(ValueError, match="must be a string or a WarmStartSettings, "
                                         "instead got dict"):
        as_warm_start_settings({"ckpt_to_initialize_from": "/runs/a"})


def test_a_model_dir_gives_its_newest_checkpoint(tmp_path):
    _save(tmp_path, step=3)
    newest = _save(tmp_path, step=8)
    assert newest == str(tmp_path / "model.ckpt-8")
    assert warm_start_checkpoint(WarmStartSettings(str(tmp_path))) == newest
    older = str(tmp_path / "model.ckpt-3")
    assert warm_start_checkpoint(WarmStartSettings(older)) == older
    (tmp_path / "empty").mkdir()
    assert warm_start_checkpoint(WarmStartSettings(str(tmp_path / "empty"))) is None


def test_every_trainable_variable_takes_the_checkpoints_value(tmp_path):
    _save(tmp_path)
    warm = _warm_values(WarmStartSettings(str(tmp_path)), _zeros_like(SAVED))
    for name in ("dense/kernel", "dense/bias", "embedding"):
        np.testing.assert_array_equal(warm[name], SAVED[name], err_msg=name)
    assert warm["counter"] == 0.0  # not trainable: its own initial value


def test_only_the_variables_matching_vars_to_warm_start(tmp_path):
    checkpoint = _save(tmp_path)
    initial = {"dense/kernel": np.full([2, 2], -1.0), "dense/bias": [-2.0, -2.0],
               "embedding": np.full([3, 2], -3.0)}
    warm = _warm_values(WarmStartSettings(checkpoint, vars_to_warm_start="dense/k.*"),
                        initial)
    np.testing.assert_array_equal(warm["dense/kernel"], SAVED["dense/kernel"])
    np.testing.assert_array_equal(warm["dense/bias"], [-2.0, -2.0])
    np.testing.assert_array_equal(warm["embedding"], initial["embedding"])


def test_a_renamed_variable_takes_its_previous_names_value(tmp_path):
    _save(tmp_path)
    warm = _warm_values(WarmStartSettings(str(tmp_path), vars_to_warm_start="new_bias",
                                          var_name_to_prev_var_name={
                                              "new_bias": "dense/bias"}),
                        {"new_bias": [0.0, 0.0]})
    np.testing.assert_array_equal(warm["new_bias"], SAVED["dense/bias"])


def test_an_embedding_follows_its_rows_into_a_new_vocabulary(tmp_path):
    _save(tmp_path)
    (tmp_path / "old.txt").write_text("ant\nbee\ncow\n")
    (tmp_path / "new.txt").write_text("cow\nant\nyak\n")
    info = tf.compat.v1.train.VocabInfo(
        new_vocab=str(tmp_path / "new.txt"), new_vocab_size=3, num_oov_buckets=0,
        old_vocab=str(tmp_path / "old.txt"),
        backup_initializer=tf.compat.v1.zeros_initializer())
    warm = _warm_values(WarmStartSettings(str(tmp_path), vars_to_warm_start="embedding",
                                          var_name_to_vocab_info={"embedding": info}),
                        {"embedding": np.full([3, 2], 9.0)})
    # cow was row 2, ant row 0; yak is new: the backup initializer's zeros.
    np.testing.assert_array_equal(warm["embedding"], [[30.0, 31.0], [10.0, 11.0],
                                                      [0.0, 0.0]])


def test_a_saved_model_directory_gives_its_variables(tmp_path):
    export = tmp_path / "export" / "1700000000"
    with tf.Graph().as_default():
        _variables({"dense/bias": [8.0, 9.0]})
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            builder = tf.compat.v1.saved_model.Builder(str(export))
            builder.add_meta_graph_and_variables(session, ["serve"])
            builder.save()
    settings = as_warm_start_settings(str(export))
    assert settings.ckpt_to_initialize_from == str(export / "variables" / "variables")
    warm = _warm_values(settings, {"dense/bias": [0.0, 0.0]})
    np.testing.assert_array_equal(warm["dense/bias"], [8.0, 9.0])
    # A directory that is not a SavedModel is taken as a model_dir.
    assert as_warm_start_settings(str(tmp_path)).ckpt_to_initialize_from == str(tmp_path)
