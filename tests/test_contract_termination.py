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

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.tf_line, pytest.mark.timed]

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
    from trainexec.keras.faults.preemption import Preempted, _note_sigterm_before

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
    from trainexec.keras.faults.preemption import _note_sigterm_before

    calls = []
    previous = signal.getsignal(signal.SIGTERM)
    try:
        _note_sigterm_before(lambda signum, frame: calls.append(signum))
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0.1)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert calls == [signal.SIGTERM] and termination_requested()


def test_a_save_that_hangs_after_a_sigterm_ends_the_task_as_preempted(tmp_path):
    """Chaos regression seed 3 (issue 36): TensorFlow's collective save waited for ever
    for acknowledgements through the coordination service of a cut-off, then restarted,
    chief. TRAINEXEC_SAVE_GRACE_SECS after the SIGTERM the task ends with 143 and the
    threads' stacks."""
    import subprocess
    import sys
    import textwrap
    import time

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    program = textwrap.dedent("""
        import os, signal, time
        from trainexec.keras.faults.preemption import _note_sigterm_before
        _note_sigterm_before(lambda signum, frame: time.sleep(3600))  # never returns
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(3600)
    """)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="2",
                                   TRAINEXEC_SAVE_GRACE_SECS="1.5"), timeout=120)
    assert done.returncode == 143, done.stderr[-2000:]
    assert time.monotonic() - started < 1.5 + 60  # the bound, plus importing TensorFlow
    assert "this task is still running 2s after SIGTERM (saving before a preemption)" \
        in done.stderr
