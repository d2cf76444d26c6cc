"""Who wrote a file, and whether it is provably gone (trainexec.records.liveness): a host name is
not a node, a pod's UID and a per-process token tell owners apart."""

from __future__ import annotations

import dataclasses
import subprocess

import pytest

from trainexec.records import liveness
from trainexec.records.liveness import ALIVE, GONE, UNKNOWN, Owner

pytestmark = pytest.mark.any_line


def _ended_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_this_process_is_alive_and_itself():
    me = Owner.current()
    assert me.token and me.is_this_process()
    assert me.status()[0] == ALIVE


def test_an_ended_process_of_this_machine_is_gone():
    gone = dataclasses.replace(Owner.current(), pid=_ended_pid(), started=None)
    assert gone.status() == (GONE, f"pid {gone.pid} on host {gone.host} is no longer running")


@pytest.mark.parametrize("change, words", [
    ({"host": "another-host"}, "is not this host"),
    # A pod re-created on another node keeps its host name: without its pod's UID,
    # another boot id under this name may be another machine, still writing.
    ({"boot": "0badb007", "pod": ""}, "another boot of host"),
    ({"pod": "1a2b3c4d"}, "ran in another pod"),
    ({"pid_namespace": "feedf00d"}, "another pid namespace"),
])
def test_an_owner_this_machine_cannot_check_is_unknown(monkeypatch, change, words):
    monkeypatch.delenv(liveness.POD_UID_VARIABLE, raising=False)
    other = dataclasses.replace(Owner.current(), **change)
    status, why = other.status()
    assert status == UNKNOWN and words in why
    assert not other.is_this_process()


def test_the_same_pod_on_a_restarted_node_is_gone(monkeypatch):
    monkeypatch.setenv(liveness.POD_UID_VARIABLE, "0f6c3a52-3a8e-4c8f-9d2e-5b1e6f7a8b9c")
    me = Owner.current()
    assert me.pod  # the UID, hashed
    status, why = dataclasses.replace(me, boot="0badb007").status()
    assert status == GONE and "has restarted" in why


def test_another_process_with_this_ones_pid_and_names_is_not_this_one():
    me = Owner.current()
    assert not dataclasses.replace(me, token="0123456789ab").is_this_process()


@pytest.mark.parametrize("owner", [
    Owner("eval-0", "b00t", "n5", 7, 123, "p0d", "t0ken"),
    Owner("host~with~tildes", "", "", 7, None, "", ""),
])
def test_a_tag_names_its_owner_again(owner):
    assert Owner.from_tag(owner.tag()) == owner


def test_tags_written_before_pods_and_tokens_still_read():
    assert Owner.from_tag("7.123@eval-0~b00t~n5") == Owner("eval-0", "b00t", "n5", 7, 123)
    assert Owner.from_tag("not a tag") is None
