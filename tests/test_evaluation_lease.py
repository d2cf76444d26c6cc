"""trainexec/evaluation/lease.py on its own, beyond the fault rows of
tests/test_fault_matrix_exports.py: a holder on this machine that is running is refused at
once, naming it; one whose pid now belongs to a later process, or a lease this process
left behind, or an unreadable lease gone silent, is taken over, saying why; the holder
renews its lease under the same token, and finds out when its file is removed. Real lease
files in `tmp_path`, a real child process for a live pid."""

import dataclasses
import json
import logging
import os
import subprocess
import time

import pytest
import tensorflow  # noqa: F401  (the lease imports it to make its directory: loaded here, once)

from processes import wait_until
from trainexec.evaluation.lease import (LEASE_FILE, EvaluatorAlreadyRunning,
                                        EvaluatorLease, EvaluatorLeaseLost)
from trainexec.records.liveness import Owner

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.tf_line, pytest.mark.timed]

LOG = "trainexec.evaluation.lease"


def lease_of(directory, owner, token="theirs"):
    """Writes the lease file `owner` would hold (just renewed); returns its path."""
    path = directory / LEASE_FILE
    path.write_text(json.dumps({"what": "the other evaluator",
                                "owner": dataclasses.asdict(owner),
                                "started_at": time.time(), "token": token}))
    return path


def held_by(path):
    return json.loads(path.read_text())


@pytest.fixture
def sleeper():
    child = subprocess.Popen(["sleep", "30"])
    yield child
    child.kill()
    child.wait()


def test_a_running_holder_on_this_machine_is_refused_at_once_naming_it(tmp_path, sleeper):
    path = lease_of(tmp_path, dataclasses.replace(Owner.current(), pid=sleeper.pid,
                                                  started=None, token=""))
    waits = []
    with pytest.raises(EvaluatorAlreadyRunning) as refused:
        EvaluatorLease(str(tmp_path), "me", stale_secs=300, sleep=waits.append).acquire()
    message = str(refused.value)
    assert message.startswith(f"Another evaluator is already running on {tmp_path}: "
                              f"the other evaluator, pid {sleeper.pid} on host ")
    assert f"(pid {sleeper.pid} on host" in message and "is running; lease" in message
    assert "SidecarEvaluator(state_dir=...)" in message and "after 300s without" in message
    assert waits == [] and held_by(path)["token"] == "theirs"  # untouched


@pytest.mark.parametrize("how", ["pid reused", "left by this process"])
def test_a_holder_provably_gone_is_taken_over_at_once_saying_why(tmp_path, sleeper, how,
                                                                  caplog):
    me = Owner.current()
    if how == "pid reused":  # the pid runs, but a process started later holds it now
        owner, why = (dataclasses.replace(me, pid=sleeper.pid, started=1, token=""),
                      "that pid now belongs to a process started later")
    else:  # this process wrote it (a lease object never released), and holds it no more
        owner, why = me, "this process wrote it and no longer holds it"
    path = lease_of(tmp_path, owner)
    waits = []
    with caplog.at_level(logging.WARNING, logger=LOG):
        with EvaluatorLease(str(tmp_path), "me", sleep=waits.append):
            assert held_by(path)["what"] == "me" and held_by(path)["token"] != "theirs"
    assert waits == []
    taking = [r.getMessage() for r in caplog.records if r.name == LOG]
    assert taking == [f"Taking over the evaluator lease {path}: " + (
        f"pid {sleeper.pid} on host {me.host} has exited ({why})" if how == "pid reused"
        else why)]
    assert not path.exists()  # released


def test_an_unreadable_lease_is_watched_then_taken_over_when_it_stays_silent(tmp_path,
                                                                            caplog):
    path = tmp_path / LEASE_FILE
    path.write_text('{"what": "half a lea')  # a writer died mid-write, or another format
    waited = []
    lease = EvaluatorLease(str(tmp_path), "me", renew_secs=0.2, stale_secs=0.6,
                           sleep=lambda s: (waited.append(s), time.sleep(s)))
    with caplog.at_level(logging.WARNING, logger=LOG):
        lease.acquire()
    try:
        assert held_by(path)["what"] == "me"
        assert 0.3 <= sum(waited) < 2 and max(waited) == pytest.approx(0.05)
        messages = [r.getMessage() for r in caplog.records if r.name == LOG]
        assert messages[0].startswith(f"The evaluator lease {path} is held by an unreadable "
                                      "lease, renewed ")
        assert messages[-1].startswith(f"Taking over the evaluator lease {path}: not "
                                       "renewed for ")
    finally:
        lease.release()


def test_an_old_unreadable_lease_is_taken_over_without_waiting(tmp_path):
    path = tmp_path / LEASE_FILE
    path.write_text("not json")
    then = time.time() - 600
    os.utime(path, (then, then))
    waits = []
    with EvaluatorLease(str(tmp_path), "me", stale_secs=120, sleep=waits.append):
        assert held_by(path)["what"] == "me"
    assert waits == []


def test_the_holder_renews_its_lease_under_the_same_token(tmp_path):
    directory = tmp_path / "not" / "made" / "yet"
    lease = EvaluatorLease(f"{directory}/", "me", renew_secs=0.03).acquire()
    try:
        assert lease.path == f"{directory}/{LEASE_FILE}"
        first = held_by(directory / LEASE_FILE)
        assert first["renewals"] == 0 and first["owner"]["pid"] == os.getpid()
        wait_until(lambda: held_by(directory / LEASE_FILE)["renewals"] >= 3, timeout=5,
                   what="three renewals")
        renewed = held_by(directory / LEASE_FILE)
        assert (renewed["token"], renewed["started_at"]) == (first["token"],
                                                              first["started_at"])
        lease.check()  # still its own
    finally:
        lease.release()
    assert os.listdir(directory) == []


def test_a_holder_whose_lease_file_is_removed_finds_out_and_stops(tmp_path, caplog):
    lease = EvaluatorLease(str(tmp_path), "SidecarEvaluator of /ckpts",
                           renew_secs=0.03).acquire()
    try:
        with caplog.at_level(logging.ERROR, logger=LOG):
            os.remove(lease.path)
            wait_until(lambda: lease.lost is not None, timeout=5, what="the loss noticed")
        with pytest.raises(EvaluatorLeaseLost) as lost:
            lease.check()
        assert str(lost.value) == (
            f"SidecarEvaluator of /ckpts lost its evaluator lease {lease.path} (its file "
            "was removed); stopping, so that only one evaluator evaluates and exports")
        assert [r.getMessage() for r in caplog.records if r.name == LOG] == [str(lost.value)]
    finally:
        lease.release()  # nothing left to remove: no error
    with EvaluatorLease(str(tmp_path), "the next one") as again:
        again.check()


def test_a_lease_on_a_store_that_cannot_create_exclusively_is_taken_without_spinning():
    # TensorFlow's ram:// matches names by prefix, as some object stores' listings do: a
    # temporary file named after the lease was once taken for the lease itself, and the
    # taker retried at once, forever, on a full core.
    import threading

    from trainexec.evaluation.lease import EvaluatorLease

    taken = []
    thread = threading.Thread(target=lambda: taken.append(
        EvaluatorLease("ram://lease-test/state", "evaluator").acquire()), daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert taken, "the lease was not taken within 30 s"
    taken[0].release()
