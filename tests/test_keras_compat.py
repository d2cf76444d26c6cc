"""trainexec/keras/compat/: every private TensorFlow / Keras attribute the Keras trainer
relies on is still there on the line this runs on (Keras 3, tf_keras, or TensorFlow
2.15), and none is used outside the inventory."""

import pytest

from private_uses import uses_outside
from trainexec.internals import LINES, current_line, missing
from trainexec.keras.compat import INVENTORY

pytestmark = pytest.mark.tf_line


@pytest.mark.keras
def test_every_attribute_inventoried_for_this_line_is_still_there():
    line = current_line()
    listed = [internal for internal in INVENTORY if line in internal.lines]
    assert listed, f"nothing is inventoried for the {line} line"
    problems = [f"{internal.name}: {missing(internal)}; without it {internal.when_missing}"
                for internal in listed if missing(internal) is not None]
    assert problems == []


@pytest.mark.parametrize("line", LINES)
def test_every_line_has_entries(line):
    assert [internal for internal in INVENTORY if line in internal.lines]


def test_no_private_attribute_is_used_outside_the_inventory():
    """A new private TensorFlow / Keras attribute belongs in compat/, listed in INVENTORY
    (`os._exit` is the standard library's)."""
    assert uses_outside("keras", INVENTORY, ignored=("_exit",)) == []
