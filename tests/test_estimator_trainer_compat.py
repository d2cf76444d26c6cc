"""trainexec/estimator_trainer/compat/: every private TensorFlow / tf.estimator attribute the
Estimator trainer relies on is still there (on TensorFlow 2.15, where Estimators run),
and none is used outside the inventory."""

import pytest

from private_uses import uses_outside
from trainexec.estimator_trainer.compat import INVENTORY
from trainexec.internals import LINE_TF_2_15, current_line, missing

pytestmark = pytest.mark.tf_line


@pytest.mark.estimator
@pytest.mark.parametrize("internal", INVENTORY, ids=lambda internal: internal.name)
def test_every_inventoried_attribute_is_still_there(internal):
    line = current_line()
    assert line == LINE_TF_2_15, f"tf.estimator works on the {line} line: add that line"
    assert line in internal.lines, f"{internal.name} is not listed for {line}"
    assert missing(internal) is None, (
        f"{missing(internal)}; without it {internal.when_missing}")


def test_the_inventory_covers_the_2_15_line():
    assert [internal for internal in INVENTORY if LINE_TF_2_15 in internal.lines]


def test_no_private_attribute_is_used_outside_the_inventory():
    """A new private TensorFlow attribute belongs in compat/, listed in INVENTORY."""
    assert uses_outside("estimator_trainer", INVENTORY) == []
