"""A training peer leaves by itself once the chief is done
(trainexec.tasks.peer_watchdog), after the trainer's cleanup (here Keras' temporary
directories, trainexec.keras.faults.scratch)."""

import logging
import os
import threading

import pytest
from fakes import FakeClock

from trainexec.records.completion import record_training_complete
from trainexec.records.finished_tasks import FinishedTasks, record_task_finished
from trainexec.keras.faults import scratch
from trainexec.tasks.peer_watchdog import LINGER_SECS, PeerWatchdog

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.tf_line, pytest.mark.timed]


class Exits:
    def __init__(self):
        self.codes = []
        self.done = threading.Event()

    def __call__(self, code):
        self.codes.append(code)
        self.done.set()


def _watchdog(model_dir, clock, exits, **kw):
    watch = FinishedTasks.starting_now(model_dir, "worker:0")
    return PeerWatchdog(watch, "chief:0", "worker:0", model_dir,
                        lambda: record_task_finished(model_dir, "worker:0"), clock=clock,
                        exit_fn=exits, cleanup=scratch.remove_all, **kw)


def test_a_peer_still_running_leaves_linger_secs_after_the_chief_finished(tmp_path, caplog):
    model_dir = str(tmp_path)
    clock, exits = FakeClock(), Exits()
    watchdog = _watchdog(model_dir, clock, exits)
    directory = scratch.make("trainexec-test-peer-")
    for _ in range(100):  # the chief is not done: nothing happens, however long
        assert not watchdog.check()
        clock.sleep(1.0)
    record_task_finished(model_dir, "chief:0")
    assert not watchdog.check()
    clock.sleep(LINGER_SECS - 0.5)
    assert not watchdog.check() and exits.codes == []
    clock.sleep(0.5)
    with caplog.at_level(logging.WARNING):
        assert watchdog.check()
    assert exits.codes == [0]
    assert watchdog.check() and exits.codes == [0]  # once
    assert "worker:0" in FinishedTasks(model_dir, 0).finished()
    assert not os.path.exists(directory) and directory not in scratch.registered()
    message = caplog.records[-1].getMessage()
    assert "chief:0 finished training 5s ago and worker:0 is still running" in message
    assert "exit code 0" in message


def test_this_runs_completion_record_counts_as_the_chief_being_done(tmp_path):
    model_dir = str(tmp_path)
    clock, exits = FakeClock(), Exits()
    watchdog = _watchdog(model_dir, clock, exits, linger_secs=2.0)
    record_training_complete(model_dir, None, 100, 100)
    assert not watchdog.check()
    clock.sleep(2.0)
    assert watchdog.check() and exits.codes == [0]


def test_an_earlier_runs_chief_record_does_not_count(tmp_path):
    model_dir = str(tmp_path)
    record_task_finished(model_dir, "chief:0")
    path = tmp_path / "trainexec" / "finished" / "chief-0.json"
    os.utime(path, (path.stat().st_atime - 100, path.stat().st_mtime - 100))
    clock, exits = FakeClock(), Exits()
    watchdog = _watchdog(model_dir, clock, exits)
    for _ in range(20):
        assert not watchdog.check()
        clock.sleep(1.0)
    assert exits.codes == []


def test_a_peer_that_returned_is_left_alone(tmp_path):
    model_dir = str(tmp_path)
    clock, exits = FakeClock(), Exits()
    watchdog = _watchdog(model_dir, clock, exits)
    record_task_finished(model_dir, "chief:0")
    assert not watchdog.check()
    watchdog.stop()
    clock.sleep(60.0)
    assert not watchdog.check() and exits.codes == []


def _started_on_the_real_clock(model_dir, exits):
    watch = FinishedTasks.starting_now(model_dir, "worker:1")
    return PeerWatchdog(watch, "chief:0", "worker:1", model_dir,
                        lambda: record_task_finished(model_dir, "worker:1"), linger_secs=0.2,
                        poll_secs=0.02, exit_fn=exits).start()


def test_the_thread_ends_the_process_on_the_real_clock(tmp_path):
    model_dir = str(tmp_path)
    exits = Exits()
    watchdog = _started_on_the_real_clock(model_dir, exits)
    assert not exits.done.wait(0.3)
    record_task_finished(model_dir, "chief:0")
    assert exits.done.wait(5.0) and exits.codes == [0]
    assert watchdog.left


def test_the_thread_stops_when_told(tmp_path):
    model_dir = str(tmp_path)
    exits = Exits()
    watchdog = _started_on_the_real_clock(model_dir, exits)
    watchdog.stop()
    record_task_finished(model_dir, "chief:0")
    assert not exits.done.wait(0.6) and not watchdog.left
