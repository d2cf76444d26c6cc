"""Waking on a directory change (inotify) with real files, the fallbacks to
sleeping, and the evaluation loop picking a checkpoint up before its poll."""

import os
import sys
import threading
import time

import pytest

from trainexec.clock import SystemClock
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.evaluation.loop import ContinuousEvaluation
from trainexec.evaluation.policy import LoopPolicy
from trainexec.evaluation.one_pass import Evaluator
from trainexec.evaluation.watch import DirectoryWaiter, DirectoryWatcher, SleepWaiter, waiter_for
from fakes import DirectoryTarget, FakeClock, point_state_file_at, write_checkpoint

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.tf_line, pytest.mark.timed]

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="inotify is Linux only")


def later(secs, action):
    """Runs `action` in a thread after `secs`; returns the thread."""
    thread = threading.Timer(secs, action)
    thread.start()
    return thread


def write_in_place(path):
    with open(path, "wb") as handle:  # as Keras writes .weights.h5
        handle.write(b"weights")


def rename_in(path):
    with open(path + ".tmp", "wb") as handle:  # as TensorFlow writes `checkpoint`
        handle.write(b"state")
    os.replace(path + ".tmp", path)


@linux_only
@pytest.mark.parametrize("write", [write_in_place, rename_in])
def test_a_file_landing_wakes_the_watcher(tmp_path, write):
    watcher = DirectoryWatcher(str(tmp_path))
    try:
        assert not watcher.wait(0.05)  # nothing yet: times out
        thread = later(0.2, lambda: write(str(tmp_path / "ckpt-1.weights.h5")))
        started = time.monotonic()
        assert watcher.wait(10.0)
        assert time.monotonic() - started < 5.0  # woken (by 0.2 s), not timed out (10 s)
        thread.join()
        watcher.wait(0.05)  # rename_in's rename may come after the first wake
        rename_in(str(tmp_path / "checkpoint"))  # two events, both queued
        assert watcher.wait(0.0)
        assert not watcher.wait(0.05)  # one wake took them all
    finally:
        watcher.close()


@linux_only
def test_files_in_sub_directories_do_not_wake_it(tmp_path):
    (tmp_path / "eval").mkdir()
    watcher = DirectoryWatcher(str(tmp_path))
    try:
        write_in_place(str(tmp_path / "eval" / "events.out.tfevents.1"))
        assert not watcher.wait(0.1)
    finally:
        watcher.close()


@linux_only
def test_the_waiter_sleeps_until_the_directory_exists_then_watches(tmp_path):
    directory = tmp_path / "model"
    clock = FakeClock(0.0)
    waiter = DirectoryWaiter(str(directory), clock)
    try:
        waiter.wait(1.0)
        assert clock.sleeps == [1.0] and not waiter.watching
        directory.mkdir()
        thread = later(0.2, lambda: rename_in(str(directory / "checkpoint")))
        started = time.monotonic()
        waiter.wait(10.0)
        assert time.monotonic() - started < 5.0 and waiter.wakes == 1  # woken, not at 10 s
        assert waiter.watching and clock.sleeps == [1.0]
        thread.join()
    finally:
        waiter.close()


@linux_only
def test_a_directory_deleted_and_made_again_is_watched_again(tmp_path):
    directory = tmp_path / "model"
    directory.mkdir()
    clock = FakeClock(0.0)
    waiter = DirectoryWaiter(str(directory), clock)
    try:
        waiter.wait(0.01)
        assert waiter.watching
        directory.rmdir()
        waiter.wait(0.5)  # the removal wakes it
        waiter.wait(1.0)  # no directory: sleeps on the clock
        assert clock.sleeps == [1.0] and not waiter.watching
        directory.mkdir()
        waiter.wait(0.01)
        assert waiter.watching
    finally:
        waiter.close()


WAITERS = [  # (case, directory, clock, expected type)
    ("local directory, real clock", "/tmp", SystemClock(), DirectoryWaiter),
    ("gs:// path: polled", "gs://bucket/model", SystemClock(), SleepWaiter),
    ("hdfs:// path: polled", "hdfs://namenode/model", SystemClock(), SleepWaiter),
    ("fake clock: sleeps on it", "/tmp", FakeClock(0.0), SleepWaiter),
]


@pytest.mark.parametrize("directory,clock,kind", [row[1:] for row in WAITERS],
                         ids=[row[0] for row in WAITERS])
def test_waiter_for(directory, clock, kind):
    waiter = waiter_for(directory, clock)
    assert type(waiter) is kind
    waiter.close()


def test_a_sleep_waiter_sleeps_on_its_clock():
    clock = FakeClock(0.0)
    SleepWaiter(clock).wait(2.5)
    assert clock.sleeps == [2.5]


class StopAfterOne(ContinuousEvalListener):
    def __init__(self):
        self.evaluated_at = None

    def after_eval(self, eval_result):
        self.evaluated_at = time.monotonic()
        return False


@linux_only
def test_the_loop_picks_a_checkpoint_up_long_before_its_poll(tmp_path):
    model_dir = str(tmp_path)
    target = DirectoryTarget(model_dir)
    listener = StopAfterOne()
    policy = LoopPolicy(poll_secs=20.0, idle_timeout_secs=30.0,
                        stale_record_grace_secs=0)
    loop = ContinuousEvaluation(Evaluator(target), target, policy, listener)
    written = {}

    def save():
        prefix = write_checkpoint(model_dir, 10)
        point_state_file_at(model_dir, prefix)
        written["at"] = time.monotonic()

    thread = later(0.5, save)
    loop.run()
    thread.join()
    assert target.evaluated == [os.path.join(model_dir, "model.ckpt-10")]
    assert listener.evaluated_at - written["at"] < 5.0  # woken, not the 20 s poll
