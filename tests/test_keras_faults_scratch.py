"""A Keras task's temporary directories (trainexec.keras.faults.scratch): registered until
removed, all removed at once when the task must leave."""

import os

import pytest

from trainexec.keras.faults import scratch

pytestmark = pytest.mark.tf_line


def test_scratch_directories_are_registered_until_removed():
    first = scratch.make("trainexec-test-scratch-")
    second = scratch.make("trainexec-test-scratch-")
    assert {first, second} <= scratch.registered()
    scratch.remove(first)
    assert not os.path.exists(first) and first not in scratch.registered()
    scratch.remove_all()
    assert not os.path.exists(second) and not scratch.registered()
