"""trainexec/formatting.py: durations and rates as the progress lines and the live view
write them."""

import math

import pytest

from trainexec.formatting import format_rate, format_secs

pytestmark = pytest.mark.any_line


@pytest.mark.parametrize("secs, text", [
    (0, "0s"), (5.4, "5s"), (59.6, "1m00s"), (185, "3m05s"), (3725, "1h02m"), (-3, "0s"),
    (None, "?"), (math.inf, "?"), (math.nan, "?"), ("12", "?"), (True, "?")])
def test_format_secs(secs, text):
    assert format_secs(secs) == text


@pytest.mark.parametrize("rate, text", [
    (0.523, "0.52"), (41.25, "41.2"), (1840.4, "1840"), (None, "?"), (math.nan, "?"),
    ("fast", "?")])
def test_format_rate(rate, text):
    assert format_rate(rate) == text
