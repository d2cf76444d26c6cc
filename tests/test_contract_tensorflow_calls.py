"""trainexec/contract/tensorflow_calls.py: a daemon thread's call into TensorFlow is
waited for when the program ends (bounded), and none starts once it is ending; a real
process's end waits for one. (TensorFlow's own client at a task's end, against the gs://
emulator: tests/cluster/test_testing_gcs.py.)"""

import subprocess
import sys
import threading
import time

import pytest

from processes import ROOT
from trainexec.contract import tensorflow_calls
from trainexec.contract.tensorflow_calls import calls_in_flight, tensorflow_call, wait_for_calls

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.any_line, pytest.mark.timed]


@pytest.fixture(autouse=True)
def not_ending(monkeypatch):
    monkeypatch.setattr(tensorflow_calls, "_ending", threading.Event())


def _call_in_a_thread(release: threading.Event) -> threading.Thread:
    entered = threading.Event()

    def call():
        with tensorflow_call():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    assert entered.wait(5)
    return thread


def test_the_end_waits_for_a_call_in_flight_until_it_returns():
    before = calls_in_flight()  # another test's watch may be looking too
    release = threading.Event()
    thread = _call_in_a_thread(release)
    assert calls_in_flight() >= before + 1
    threading.Timer(0.3, release.set).start()
    began = time.monotonic()
    assert wait_for_calls(10.0) is True
    assert 0.2 < time.monotonic() - began < 5.0
    thread.join(5)
    assert not thread.is_alive()


def test_the_wait_is_bounded_for_a_call_that_does_not_return():
    release = threading.Event()
    thread = _call_in_a_thread(release)
    try:
        began = time.monotonic()
        assert wait_for_calls(0.3) is False
        assert time.monotonic() - began >= 0.3
    finally:
        release.set()
        thread.join(5)


def test_an_exit_without_finalizing_stops_new_calls_without_waiting(monkeypatch):
    unregistered = []
    monkeypatch.setattr(tensorflow_calls.atexit, "unregister", unregistered.append)
    tensorflow_calls.stop_new_calls()
    assert tensorflow_calls.ending() and unregistered == [wait_for_calls]


def test_no_call_starts_once_the_program_is_ending():
    assert wait_for_calls(1.0) is True  # nothing in flight: at once
    started = threading.Event()

    def call():
        with tensorflow_call():
            started.set()

    threading.Thread(target=call, daemon=True).start()
    assert not started.wait(0.5)


PROGRAM = """
import sys, threading, time
from trainexec.contract.tensorflow_calls import tensorflow_call
def call():
    with tensorflow_call():
        time.sleep(1.0)  # as a gs:// read through a 429 back-off
        with open(sys.argv[1], "w") as done:
            done.write("returned")
threading.Thread(target=call, daemon=True).start()
time.sleep(0.2)
print("program over", flush=True)
"""


def test_a_process_ends_after_its_call_in_flight_returns(tmp_path):
    done = tmp_path / "done"
    ended = subprocess.run([sys.executable, "-c", PROGRAM, str(done)], cwd=ROOT, timeout=60,
                           capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})
    assert ended.returncode == 0, ended.stderr
    assert ended.stdout == "program over\n"
    assert done.read_text() == "returned"  # a daemon thread alone would have been cut off
