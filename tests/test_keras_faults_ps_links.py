"""trainexec.keras.faults.ps_links with stand-in probes and a fake clock: who is waited
for, how long, and what is given up on (no TensorFlow needed)."""

import logging
import threading
import time

from fakes import FakeClock
from trainexec.keras.faults.ps_links import (Link, is_ps_link_error, wait_for_ps_links,
                                             worker_devices)
import pytest

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.tf_line, pytest.mark.timed]

WORKER = "/job:worker/replica:0/task:0"


class UnavailableError(Exception):
    """Named and placed as TensorFlow's: the check goes by the type's name, its
    module and the message."""


UnavailableError.__module__ = "tensorflow.python.framework.errors_impl"


class NotTensorFlows(Exception):
    pass


NotTensorFlows.__name__ = "UnavailableError"


PS_DOWN = UnavailableError("failed to connect to all addresses\nAdditional GRPC error "
                           "information from remote target /job:ps/replica:0/task:0")
WORKER_DOWN = UnavailableError("Socket closed\nAdditional GRPC error information from "
                               "remote target /job:worker/replica:0/task:0")


def failing(times, error):
    calls = []

    def touch(worker):
        calls.append(worker)
        if len(calls) <= times:
            raise error
    return touch, calls


def test_only_an_unavailable_ps_is_a_link_error():
    assert is_ps_link_error(PS_DOWN)
    assert not is_ps_link_error(WORKER_DOWN)
    assert not is_ps_link_error(ValueError("/job:ps/replica:0/task:0"))
    assert not is_ps_link_error(NotTensorFlows("/job:ps/replica:0/task:0"))


def test_worker_devices_of_a_list_and_of_a_sparse_job():
    assert worker_devices({"worker": ["a:1", "b:1"], "ps": ["c:1"]}) == [
        "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"]
    assert worker_devices({"worker": {3: "a:1", 1: "b:1"}}) == [
        "/job:worker/replica:0/task:1", "/job:worker/replica:0/task:3"]
    assert worker_devices({"chief": ["a:1"], "ps": ["c:1"]}) == []


def test_links_that_answer_at_once_cost_one_call_and_say_nothing(caplog):
    touch, calls = failing(0, PS_DOWN)
    with caplog.at_level(logging.INFO, "trainexec.keras.faults.ps_links"):
        result = wait_for_ps_links([WORKER, "/job:worker/replica:0/task:1"], touch,
                                   clock=FakeClock())
    assert result == {WORKER: Link(True, 0.0, 1),
                      "/job:worker/replica:0/task:1": Link(True, 0.0, 1)}
    assert sorted(calls) == [WORKER, "/job:worker/replica:0/task:1"]
    assert caplog.messages == []


def test_a_ps_still_backing_off_is_waited_for(caplog):
    clock = FakeClock()
    touch, calls = failing(7, PS_DOWN)  # about TensorFlow's 1 s reconnect back-off
    with caplog.at_level(logging.INFO, "trainexec.keras.faults.ps_links"):
        result = wait_for_ps_links([WORKER], touch, timeout_secs=5, poll_secs=0.1,
                                   clock=clock)
    link = result[WORKER]
    assert link.reached and link.attempts == 8 and abs(link.secs - 0.7) < 1e-9
    assert clock.sleeps == [0.1] * 7
    assert len(calls) == 8
    assert any("reached every parameter server after 0.7s (8 attempts" in m
               for m in caplog.messages), caplog.messages


def test_a_worker_that_cannot_be_reached_is_left_to_the_coordinator(caplog):
    clock = FakeClock()
    touch, calls = failing(100, WORKER_DOWN)
    result = wait_for_ps_links([WORKER], touch, clock=clock)
    assert result[WORKER] == Link(False, 0.0, 1, "UnavailableError: Socket closed")
    assert calls == [WORKER] and clock.sleeps == []  # not tried again
    assert any("did not reach every parameter server" in m and "training starts anyway"
               in m for m in caplog.messages), caplog.messages


def test_a_ps_that_stays_down_is_given_up_on_at_the_time_limit():
    clock = FakeClock()
    touch, calls = failing(10_000, PS_DOWN)
    result = wait_for_ps_links([WORKER], touch, timeout_secs=2, poll_secs=0.25,
                               clock=clock)
    link = result[WORKER]
    assert not link.reached
    assert link.why == "UnavailableError: failed to connect to all addresses"
    assert 1.75 <= link.secs < 2 and link.attempts == len(calls) == 8


def test_each_worker_is_waited_for_on_its_own():
    """worker:1's connection backs off for three reads; worker:0 answers at once
    (real time, a thread each)."""
    failures = {WORKER: 0, "/job:worker/replica:0/task:1": 3}

    def touch(worker):
        if failures[worker]:
            failures[worker] -= 1
            raise PS_DOWN

    result = wait_for_ps_links([WORKER, "/job:worker/replica:0/task:1"], touch,
                               timeout_secs=5, poll_secs=0.02)
    assert result[WORKER].reached and result[WORKER].attempts == 1
    late = result["/job:worker/replica:0/task:1"]
    assert late.reached and late.attempts == 4 and 0.06 <= late.secs < 2


def test_a_frozen_worker_does_not_hold_the_chief_past_the_time_limit():
    release = threading.Event()

    def touch(worker):
        release.wait(30)  # a call to a frozen worker that never answers

    started = time.monotonic()
    try:
        result = wait_for_ps_links([WORKER], touch, timeout_secs=0.3, poll_secs=0.05)
    finally:
        release.set()
    assert time.monotonic() - started < 2
    assert result[WORKER].reached is False and result[WORKER].attempts == 1
    assert result[WORKER].why == "no answer within 0.3s"
