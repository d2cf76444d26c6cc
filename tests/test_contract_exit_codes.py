"""trainexec/contract/exit_codes.py: the exit-code contract's pieces (classification, overrides,
descriptions) table by table. One real process per row of the README's table is
tests/cluster/test_exit_codes_processes.py."""

from __future__ import annotations

import pytest
import tensorflow as tf

from trainexec.errors import ConfigError
from trainexec.contract.exit_codes import (CONFIG_ERROR, PEER_LOST, PREEMPTED, SERVER_UNAVAILABLE,
                                  STORAGE_FAILED, STORAGE_UNAVAILABLE, USER_ERROR, ExitCodes,
                                  ServerUnavailableError, classify)

pytestmark = pytest.mark.tf_line


def _chained(outer, inner):
    try:
        try:
            raise inner
        except BaseException as err:
            raise outer from err
    except BaseException as err:
        return err


@pytest.mark.parametrize("error, in_cluster, cause", [
    (ConfigError("TF_CONFIG task.index 3 is out of range"), True, CONFIG_ERROR),
    (ValueError("bad shapes"), True, USER_ERROR),
    (tf.errors.UnavailableError(None, None, "Socket closed"), True, PEER_LOST),
    (tf.errors.DeadlineExceededError(None, None, "Deadline Exceeded"), True, PEER_LOST),
    (tf.errors.AbortedError(None, None, "coordination service has stopped"), True, PEER_LOST),
    (tf.errors.CancelledError(None, None, "[_Derived_]Cancelled"), True, PEER_LOST),
    (tf.errors.InternalError(None, None, "Failed to connect to all addresses"), True,
     PEER_LOST),
    (tf.errors.InternalError(None, None, "Matrix size-incompatible"), True, USER_ERROR),
    # Chaos seed 119 (PSS): the ps restarted under a running step; the coordinator's
    # next closure named a tensor of the ps' last run.
    (tf.errors.InvalidArgumentError(None, None, "Graph execution error: Unable to find the "
                                    "relevant tensor remote_handle: Op ID: 15, Output num: "
                                    "0. One possible cause is that the tensor was accessed "
                                    "after deallocation in a distributed worker setup."),
     True, PEER_LOST),
    # Chaos seed 76 of the storage rerun (PSS on NFS): the ps, restarted after a storage
    # error, under a step in flight.
    (tf.errors.InternalError(None, None, "2 root error(s) found. (0) INTERNAL: Could not "
                             "find function library for registered component function: "
                             "__inference_train_steps_1137 (1) ABORTED: RecvTensor expects "
                             "a different device incarnation: 1246 vs. 1714. Your worker "
                             "job (\"/job:ps/replica:0/task:0\") was probably restarted."),
     True, PEER_LOST),
    # CI, TF 2.15, PSS, no fault: the chief's request to a worker arrived garbled
    # ("String field 'tensorflow.eager.Operation.device' contains invalid UTF-8").
    (tf.errors.InternalError(None, None, "2 root error(s) found. (0) INTERNAL: "
                             "{{function_node __wrapped__Identity_device_/job:chief/"
                             "replica:0/task:0/device:CPU:0}} Unable to parse request "
                             "(1) CANCELLED: RecvFromRemoteAsync is cancelled."),
     True, PEER_LOST),
    # The same words from the user's own call (a py_function asking an HTTP API): the
    # program's error, not a garbled exchange between tasks.
    (tf.errors.InternalError(None, None, "Error in user-defined function passed to Map: "
                             "ValueError: Unable to parse request body"), True, USER_ERROR),
    (tf.errors.InvalidArgumentError(None, None, "/job:worker: Unable to parse request"),
     True, USER_ERROR),
    (tf.errors.InvalidArgumentError(None, None, "Incompatible shapes: [2] vs. [3]"), True,
     USER_ERROR),
    # Locally no error is a lost peer.
    (tf.errors.UnavailableError(None, None, "Socket closed"), False, USER_ERROR),
    # The cause decides through the chain (Keras wraps errors in its own).
    (_chained(RuntimeError("fit failed"), tf.errors.UnavailableError(None, None, "x")), True,
     PEER_LOST),
    (_chained(RuntimeError("start"), ServerUnavailableError("port held")), True,
     SERVER_UNAVAILABLE),
    # A user's own error that happens to mention a peer is not one.
    (RuntimeError("heartbeat of my pacemaker model"), True, USER_ERROR),
    # Storage: an Unavailable from a file operation is the storage's, not a lost peer;
    # retryable in a cluster and locally alike. A full disk is permanent.
    (tf.errors.UnavailableError(None, None, "Error executing an HTTP request: HTTP response "
                                "code 503 when initiating an upload to gs://b/m/ckpt-3.index"),
     True, STORAGE_UNAVAILABLE),
    (tf.errors.UnavailableError(None, None, "HTTP response code 503 ... gs://b/m/x"), False,
     STORAGE_UNAVAILABLE),
    (OSError(5, "Input/output error", "/mnt/nfs/m/checkpoint"), True, STORAGE_UNAVAILABLE),
    (tf.errors.ResourceExhaustedError(None, None, "/m/ckpt-300_temp/x; No space left on "
                                      "device"), True, STORAGE_FAILED),
])
def test_classify(error, in_cluster, cause):
    assert classify(error, in_cluster) == cause


@pytest.mark.parametrize("code, retryable", [
    (0, False), (1, False), (2, False), (75, False), (127, False), (128, True), (134, True),
    (137, True), (143, True), (170, True), (171, True), (172, True), (74, False), (255, True),
    (-9, True), (-15, True), (None, False)])
def test_retryable_as_tfjobs_exit_code_policy(code, retryable):
    assert ExitCodes().is_retryable(code) is retryable


def test_overrides_replace_a_code_and_keep_it_retryable():
    codes = ExitCodes.from_env({"TRAINEXEC_EXIT_CODES": " preempted=75 , peer_lost=75"})
    assert codes.code_for(PREEMPTED) == 75 and codes.code_for(PEER_LOST) == 75
    assert codes.is_retryable(75) and not codes.is_retryable(1)
    assert codes.code_for(USER_ERROR) == 1
    assert ExitCodes.from_env({}) == ExitCodes()


@pytest.mark.parametrize("text, words", [
    ("preempted", "entry 'preempted' must be CAUSE=CODE"),
    ("done=3", "entry 'done=3' must be CAUSE=CODE with CAUSE one of user_error"),
    ("prempted=75", "entry 'prempted=75' must be CAUSE=CODE"),
    ("preempted=0", "entry 'preempted=0': the code must be a whole number from 1 to 255"),
    ("preempted=x", "entry 'preempted=x': the code must be a whole number from 1 to 255"),
    ("preempted=300", "entry 'preempted=300': the code must be a whole number from 1 to "
     "255"),
])
def test_a_bad_override_is_named(text, words):
    with pytest.raises(ConfigError) as raised:
        ExitCodes.from_env({"TRAINEXEC_EXIT_CODES": text})
    assert str(raised.value).startswith("TRAINEXEC_EXIT_CODES " + words), raised.value


@pytest.mark.parametrize("code, words", [
    (0, "the role finished"), (1, "(permanent)"), (143, "preempted"), (137, "killed by a "
     "signal or aborted (retryable)"), (-9, "killed by signal 9 (retryable)"),
    (None, "still running")])
def test_describe(code, words):
    assert words in ExitCodes().describe(code)


def test_a_bad_override_ends_the_task_as_a_config_error(monkeypatch):
    """Installing the hook under a bad TRAINEXEC_EXIT_CODES raises the ConfigError with
    the hook in place, so the process ends with the default config-error code (2)."""
    import sys

    from trainexec.contract.exit_codes import install_exit_hook

    monkeypatch.setattr(sys, "excepthook", lambda *args: None)
    monkeypatch.setattr("trainexec.contract.exit_codes._installed", {})
    monkeypatch.setenv("TRAINEXEC_EXIT_CODES", "peer_lost=0")
    exits = []
    with pytest.raises(ConfigError) as raised:
        install_exit_hook("chief:0", exit_fn=exits.append)
    monkeypatch.setattr("atexit._run_exitfuncs", lambda: None)
    sys.excepthook(ConfigError, raised.value, None)
    assert exits == [2]
