"""trainexec/estimator_engine/compat/keras_names.py: under Keras 3, layers made without a
name inside `fresh_auto_names` are named as in a fresh process, every time, and the
count outside goes on where it was; elsewhere it changes nothing."""

import pytest
import tensorflow as tf

from trainexec.estimator_engine.compat.keras_names import fresh_auto_names
from trainexec.internals import LINE_KERAS_3, current_line

pytestmark = pytest.mark.tf_line


@pytest.mark.keras
def test_each_block_names_layers_afresh_and_the_count_outside_goes_on():
    outside = [tf.keras.layers.Dense(1).name for _ in range(2)]
    inside = []
    for _ in range(2):
        with tf.Graph().as_default(), fresh_auto_names():
            inside.append([tf.keras.layers.Dense(1).name for _ in range(2)])
    after = tf.keras.layers.Dense(1).name
    assert inside[0] == inside[1]
    if current_line() == LINE_KERAS_3:
        assert inside[0] == ["dense", "dense_1"]
    number = int(outside[1].rpartition("_")[2]) if "_" in outside[1] else 0
    assert after == f"dense_{number + 1}"


@pytest.mark.keras
def test_an_error_in_the_block_still_restores_the_count():
    if current_line() != LINE_KERAS_3:
        pytest.skip("tf_keras and Keras 2.15 count names per graph: the block changes "
                    "nothing there")
    before = tf.keras.layers.Dense(1).name
    with pytest.raises(RuntimeError):
        with fresh_auto_names():
            tf.keras.layers.Dense(1)
            raise RuntimeError("the model_fn failed")
    number = int(before.rpartition("_")[2]) if "_" in before else 0
    assert tf.keras.layers.Dense(1).name == f"dense_{number + 1}"
