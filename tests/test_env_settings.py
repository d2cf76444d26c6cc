"""trainexec/env_settings.py: a seconds setting read from the environment, checked once."""

import pytest

from trainexec.env_settings import seconds_setting
from trainexec.errors import ConfigError

pytestmark = pytest.mark.any_line

NAME = "TRAINEXEC_TEST_SECS"


@pytest.mark.parametrize("value, expected", [
    (None, 10.0), ("", 10.0), ("  ", 10.0), ("0", 0.0), ("2.5", 2.5), (" 30 ", 30.0),
])
def test_a_number_of_seconds_or_the_default(value, expected):
    environ = {} if value is None else {NAME: value}
    assert seconds_setting(NAME, 10.0, "what it bounds", environ=environ) == expected


@pytest.mark.parametrize("value", ["-1", "ten", "nan", "inf", "1e999"])
def test_anything_else_names_the_variable_value_meaning_and_default(value):
    with pytest.raises(ConfigError) as raised:
        seconds_setting(NAME, 10.0, "0 turns the bound off", environ={NAME: value})
    message = str(raised.value)
    assert f"{NAME}={value!r}" in message
    assert "0 turns the bound off" in message
    assert "default 10" in message


def test_without_an_environ_it_reads_the_process_environment(monkeypatch):
    monkeypatch.setenv(NAME, "4")
    assert seconds_setting(NAME, 1.0, "meaning") == 4.0
