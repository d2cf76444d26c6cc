"""trainexec/keras/evaluate/first_checkpoint_hint.py: `HintingWaiter` cuts the waits of an
evaluator that has seen no checkpoint at the moment the hint is due, logs the hint once
then (with the seconds actually waited and the directory), stops looking once a checkpoint
was seen, and closes the waiter it wraps. On a fake clock, but for one short real wait
on a directory. Its use in `SidecarEvaluator`: tests/test_keras_evaluate_sidecar_contract.py."""

import logging
import sys
import time

import pytest

from fakes import FakeClock
from trainexec.clock import SystemClock
from trainexec.evaluation.watch import DirectoryWaiter, SleepWaiter
from trainexec.keras.evaluate.first_checkpoint_hint import (FIRST_CHECKPOINT_HINT_SECS,
                                                            HintingWaiter)

pytestmark = pytest.mark.any_line

LOGGER = "trainexec.keras.evaluate.first_checkpoint_hint"


class Looks:
    """`has_checkpoint`: answers from `answers` (then the last one again), counting calls."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), 0

    def __call__(self):
        self.calls += 1
        return self.answers[min(self.calls, len(self.answers)) - 1]


def hints(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.getMessage().startswith("No checkpoints appear")]


@pytest.fixture
def info_logs(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    return caplog


def test_waits_are_cut_where_the_hint_is_due_and_the_next_one_logs_it_once(info_logs):
    clock = FakeClock(1000.0)  # the hint is due 30 s after the waiter was made
    looks = Looks(False)
    waiter = HintingWaiter(SleepWaiter(clock), clock, "/ckpts", looks)
    assert FIRST_CHECKPOINT_HINT_SECS == 30.0  # as tf.keras.utils.SidecarEvaluator
    waiter.wait(12)
    waiter.wait(12)   # to 24 s: less than the 18 s left, not cut
    waiter.wait(12)   # cut to the 6 s left
    assert clock.sleeps == [12, 12, 6] and hints(info_logs) == []
    waiter.wait(12)   # at 30 s: the hint, and this wait is not cut
    waiter.wait(100)
    assert clock.sleeps == [12, 12, 6, 12, 100]
    [hint] = hints(info_logs)
    assert hint.startswith("No checkpoints appear to be found after 30 seconds in /ckpts.")
    assert looks.calls == 4  # not asked again once the hint was given


def test_the_hint_says_the_seconds_actually_waited_and_where(info_logs, tmp_path):
    clock = FakeClock(0.0)
    waiter = HintingWaiter(SleepWaiter(clock), clock, str(tmp_path), Looks(False),
                           after_secs=5)
    waiter.wait(2)
    clock.time += 93.4  # an evaluation, or a slow look, between two waits
    waiter.wait(2)
    [hint] = hints(info_logs)
    assert hint.startswith(f"No checkpoints appear to be found after 95 seconds in "
                           f"{tmp_path}. Is it the directory training saves to?")
    assert "trainexec.SidecarEvaluator's documentation" in hint


def test_a_checkpoint_seen_in_time_means_no_hint_and_no_more_looks(info_logs):
    clock = FakeClock(0.0)
    looks = Looks(False, False, True)
    waiter = HintingWaiter(SleepWaiter(clock), clock, "/ckpts", looks, after_secs=30)
    for _ in range(3):
        waiter.wait(20)   # 20, then cut to 10 at 20 s; at 30 s a checkpoint is there
    for _ in range(5):
        waiter.wait(20)
    assert clock.sleeps == [20, 10] + [20] * 6
    assert hints(info_logs) == [] and looks.calls == 3


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_on_the_real_clock_a_directory_wait_ends_when_the_hint_is_due_and_close_reaches_it(
        info_logs, tmp_path):
    inner = DirectoryWaiter(str(tmp_path), SystemClock())
    started = time.monotonic()
    waiter = HintingWaiter(inner, SystemClock(), str(tmp_path), Looks(False),
                           after_secs=0.3)
    waiter.wait(30)  # nothing changes in the directory: cut at the hint's moment
    assert 0.29 <= time.monotonic() - started < 20
    assert inner.watching  # it did watch the directory
    waiter.close()
    assert not inner.watching
