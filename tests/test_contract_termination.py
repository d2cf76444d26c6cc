"""A SIGTERM makes whatever error follows a preemption (retryable), never the user's
error: `trainexec.contract.termination`, read by the exit-code contract's `classify`,
and the SIGTERM handler trainexec puts in front of TensorFlow's preemption handler."""

from __future__ import annotations

import os
import signal

import pytest

from trainexec.contract.exit_codes import (CONFIG_ERROR, PEER_LOST, PREEMPTED, USER_ERROR,
                                           classify)
from trainexec.contract.termination import (forget_termination_request,
                                            note_termination_requested,
                                            termination_requested)
from trainexec.errors import ConfigError

# What pybind11 hands over when TensorFlow's coordination service call fails inside
# its preemption handler (the chief cut off): a plain RuntimeError.
COORDINATION_FAILED = RuntimeError("UnavailableError: Socket closed\nAdditional GRPC error "
                                   "information from remote target /job:chief/replica:0")


@pytest.fixture
def clean_state():
    forget_termination_request()
    yield
    forget_termination_request()


@pytest.mark.parametrize("error, in_cluster, terminating, cause", [
    (ValueError("a bug"), True, False, USER_ERROR),
    (ValueError("a bug"), True, True, PREEMPTED),  # the task is going away anyway
    (ValueError("a bug"), False, True, PREEMPTED),
    (ConfigError("bad TF_CONFIG"), True, True, CONFIG_ERROR),  # still permanent
    (COORDINATION_FAILED, True, False, PEER_LOST),  # TensorFlow's status through pybind11
    (COORDINATION_FAILED, False, False, USER_ERROR),  # no peers outside a cluster
    (RuntimeError("my own UnavailableError: handling"), True, False, USER_ERROR),
])
def test_classify_after_a_sigterm(error, in_cluster, terminating, cause):
    assert classify(error, in_cluster, terminating=terminating) == cause


def test_classify_reads_the_noted_sigterm(clean_state):
    assert classify(ValueError("x")) == USER_ERROR
    note_termination_requested()
    assert termination_requested() and classify(ValueError("x")) == PREEMPTED


def test_a_sigterm_tensorflow_cannot_pass_on_ends_the_task_as_preempted(clean_state):
    """TensorFlow's handler raising (the coordination service unreachable) becomes
    Preempted, a SystemExit with the preempted code; the SIGTERM is noted."""
    from trainexec.keras.preemption import Preempted, _note_sigterm_before

    calls = []

    def tensorflows_handler(signum, frame):
        calls.append(signum)
        raise COORDINATION_FAILED

    previous = signal.getsignal(signal.SIGTERM)
    try:
        _note_sigterm_before(tensorflows_handler)
        with pytest.raises(Preempted) as stopped:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0.1)  # let the handler run
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert calls == [signal.SIGTERM] and termination_requested()
    assert stopped.value.code == 143 and stopped.value.__cause__ is COORDINATION_FAILED
    assert "before a save" in str(stopped.value)


def test_a_sigterm_tensorflow_passes_on_is_only_noted(clean_state):
    from trainexec.keras.preemption import _note_sigterm_before

    calls = []
    previous = signal.getsignal(signal.SIGTERM)
    try:
        _note_sigterm_before(lambda signum, frame: calls.append(signum))
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0.1)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert calls == [signal.SIGTERM] and termination_requested()
