"""trainexec/keras/fit/log_values.py: logs as `fit` hands them to callbacks."""

import pytest
import numpy as np

from trainexec.keras.fit.log_values import log_values

pytestmark = pytest.mark.tf_line


class Remote:
    """Stands in for a ParameterServerStrategy RemoteValue."""

    def __init__(self, value):
        self.value = value

    def fetch(self):
        return self.value


def test_scalars_become_floats_and_several_values_an_array():
    values = log_values({"loss": np.float32(0.5), "steps": 3, "f1": np.array([0.1, 0.9])})
    assert values["loss"] == 0.5 and type(values["loss"]) is float
    assert values["steps"] == 3.0 and type(values["steps"]) is float
    np.testing.assert_allclose(values["f1"], [0.1, 0.9])


def test_remote_values_are_fetched_nested_dicts_flattened_and_the_rest_kept():
    marker = object()
    values = log_values(Remote({"loss": Remote(np.float64(1.5)),
                                "metric": {"precision": 0.25, "recall": 0.75},
                                "note": "text", "other": marker}))
    assert values == {"loss": 1.5, "precision": 0.25, "recall": 0.75, "note": "text",
                      "other": marker}


def test_no_logs_are_empty():
    assert log_values(None) == {}
