"""trainexec/contract/storage_watch.py: the bound on how long model_dir may not answer,
per storage and from the environment, and the watch that ends the task with the
retryable storage code when a look at model_dir does not come back in time (a fake
probe here; a real stalled file server: tests/cluster/test_contract_storage_watch_processes.py)."""

import threading

import pytest

from trainexec.contract.storage_watch import ENV_VAR, StorageWatch, stall_bound
from trainexec.errors import ConfigError

pytestmark = pytest.mark.any_line



def test_the_bound_per_storage_and_from_the_environment(tmp_path, monkeypatch):
    assert stall_bound(str(tmp_path), {}) == 0.0  # a local disk: none
    assert stall_bound("gs://bucket/model", {}) == 300.0
    assert stall_bound("gs://bucket/model", {ENV_VAR: "45"}) == 45.0
    with pytest.raises(ConfigError, match=f"{ENV_VAR}='soon' must be a number"):
        stall_bound("gs://bucket/model", {ENV_VAR: "soon"})


def test_a_look_that_does_not_come_back_ends_the_task_with_the_storage_code(caplog):
    stalled = threading.Event()
    exited = []
    watch = StorageWatch("/mnt/nfs/run1", "worker:0", bound_secs=0.2,
                         probe=lambda path: stalled.wait(30), exit_fn=exited.append)
    try:
        assert watch.look() is False
    finally:
        stalled.set()
    assert exited == [172] and watch.fired
    assert ("worker:0: storage unavailable: /mnt/nfs/run1 did not answer in 0s"
            in caplog.text)


def test_an_answer_even_an_error_is_not_a_stall():
    exited = []

    def refused(path):
        raise OSError(5, "Input/output error")

    assert StorageWatch("/m", "chief:0", 1.0, probe=refused, exit_fn=exited.append).look()
    assert StorageWatch("/m", "chief:0", 1.0, probe=lambda path: None,
                        exit_fn=exited.append).look()
    assert exited == []


def test_the_code_follows_trainexec_exit_codes(monkeypatch):
    monkeypatch.setenv("TRAINEXEC_EXIT_CODES", "storage_unavailable=75")
    stalled, exited = threading.Event(), []
    try:
        StorageWatch("/m", "chief:0", 0.1, probe=lambda path: stalled.wait(30),
                     exit_fn=exited.append).look()
    finally:
        stalled.set()
    assert exited == [75]


def test_a_look_parked_because_the_program_is_ending_is_not_a_stall(monkeypatch):
    # Once the program ends, a new call into TensorFlow parks until the process is
    # gone (trainexec.contract.tensorflow_calls): a look that began just then must not
    # end the task with the storage code (with the exit deadline off, nothing else
    # would end it first).
    from trainexec.contract import storage_watch

    monkeypatch.setattr(storage_watch, "ending", lambda: True)
    parked, exited = threading.Event(), []
    try:
        assert StorageWatch("/m", "chief:0", 0.1, probe=lambda path: parked.wait(30),
                            exit_fn=exited.append).look()
    finally:
        parked.set()
    assert exited == []
