"""trainexec/estimator_engine/compat/: the private Keras attributes the Estimator engine
relies on are still there on the line that uses them (Keras 3), and none is used
elsewhere in the engine."""

import pytest

from private_uses import uses_outside
from trainexec.estimator_engine.compat import INVENTORY
from trainexec.internals import LINE_KERAS_3, current_line, missing

pytestmark = pytest.mark.tf_line


@pytest.mark.keras
def test_every_attribute_inventoried_for_this_line_is_still_there():
    import tensorflow as tf

    tf.keras.layers.Dense  # loads tf.keras: Keras 3, tf_keras or Keras 2.15
    listed = [internal for internal in INVENTORY if current_line() in internal.lines]
    if current_line() == LINE_KERAS_3:
        assert listed, "nothing is inventoried for the Keras 3 line"
    problems = [f"{internal.name}: {missing(internal)}; without it {internal.when_missing}"
                for internal in listed if missing(internal) is not None]
    assert problems == []


def test_the_inventory_covers_the_keras_3_line():
    assert [internal for internal in INVENTORY if LINE_KERAS_3 in internal.lines]


# The engine's own private names used across objects of its own classes (not
# TensorFlow's or Keras's): RunConfig.replace() sets the copy's field store; add_metrics
# passes an Estimator's warm start on to the Estimator it makes.
OWN_NAMES = ("_values", "_warm_start")


def test_no_private_attribute_is_used_outside_the_inventory():
    """A new private attribute belongs in compat/, listed in INVENTORY."""
    assert uses_outside("estimator_engine", INVENTORY, ignored=OWN_NAMES) == []
