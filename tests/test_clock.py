"""trainexec/clock.py: the real clock the waiting loops use when no fake is given."""

import time

import pytest

from trainexec.clock import Clock, SystemClock

pytestmark = pytest.mark.any_line


def test_the_system_clock_is_monotonic_and_sleeps_what_it_is_asked():
    clock: Clock = SystemClock()
    start = clock.now()
    clock.sleep(0.02)
    assert clock.now() - start >= 0.02
    assert abs(clock.now() - time.monotonic()) < 1.0


def test_a_sleep_of_zero_or_less_returns_at_once(monkeypatch):
    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    SystemClock().sleep(0)
    SystemClock().sleep(-1.5)
    SystemClock().sleep(0.25)
    assert slept == [0.25]
