"""A task of a group that trains in step leaves once a peer has been silent too long
(trainexec.tasks.peer_heartbeats): its heartbeat records, the judgement, the exit."""

import json
import logging
import os

import pytest
from fakes import FakeClock

from trainexec.errors import ConfigError
from trainexec.tasks.peer_heartbeats import (BEAT_SECS, SILENT_SECS, SILENT_SECS_VAR,
                                             PeerHeartbeats, silent_secs_setting)

pytestmark = pytest.mark.any_line

GROUP = ("chief:0", "worker:0", "worker:1")


class Exits(list):
    def __call__(self, code):
        self.append(code)


def _heartbeats(model_dir, task, clock, exits, finished=set, **kw):
    return PeerHeartbeats(str(model_dir), task, GROUP, finished=finished, clock=clock,
                          exit_fn=exits, silent_secs=kw.pop("silent_secs", 60.0), **kw)


def _group(tmp_path, clock, exits, **kw):
    """Every task's heartbeats, each having written its first beat (as before training)."""
    group = {task: _heartbeats(tmp_path, task, clock, exits, **kw) for task in GROUP}
    for heartbeats in group.values():
        heartbeats.beat()
    return group


def _run_for(secs, clock, group, watcher="worker:1", quiet=()):
    """`secs` of the group's life, a beat at a time: every task but `quiet` beats, then
    `watcher` looks; returns whether it left."""
    left = False
    for _ in range(int(secs / BEAT_SECS)):
        clock.sleep(BEAT_SECS)
        for task, heartbeats in group.items():
            if task not in quiet:
                heartbeats.beat()
        left = group[watcher].check()
        if left:
            break
    return left


def test_each_task_writes_its_record_with_a_token_and_a_count(tmp_path):
    clock, exits = FakeClock(), Exits()
    group = _group(tmp_path, clock, exits)
    group["worker:1"].beat()
    path = tmp_path / "trainexec" / "heartbeats" / "worker-1.json"
    record = json.loads(path.read_text())
    assert record["task"] == "worker:1" and record["beat"] == 2 and len(record["token"]) == 12
    assert group["worker:1"].path("worker:1") == str(path)
    assert sorted(os.listdir(path.parent)) == ["chief-0.json", "worker-0.json", "worker-1.json"]


def test_peers_that_beat_are_never_lost(tmp_path):
    clock, exits = FakeClock(), Exits()
    group = _group(tmp_path, clock, exits)
    assert not _run_for(10 * SILENT_SECS, clock, group)
    assert exits == []


def test_a_peer_silent_for_silent_secs_makes_the_task_leave_as_a_lost_peer(tmp_path, caplog):
    """Chaos row estimator-mwms-local-kill-chief0: the chief killed, worker:1's step
    never returned; the chief's beats stopped with it."""
    clock, exits = FakeClock(), Exits()
    group = _group(tmp_path, clock, exits)
    assert not _run_for(30, clock, group)
    started = clock.now()
    with caplog.at_level(logging.ERROR, logger="trainexec.tasks.peer_heartbeats"):
        assert _run_for(2 * SILENT_SECS, clock, group, quiet=("chief:0",))
    assert exits == [170]
    # the watcher last saw the chief's record change at its look right after the last beat
    assert clock.now() - started == SILENT_SECS
    assert "chief:0 of its MultiWorkerMirroredStrategy group has not written a heartbeat " \
        "for 60s" in caplog.text and "exit code 170" in caplog.text
    assert group["worker:1"].check()  # once left, it says so and does nothing more
    assert exits == [170]


def test_the_exit_code_is_the_contracts_peer_lost_code(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINEXEC_EXIT_CODES", "peer_lost=75")
    clock, exits = FakeClock(), Exits()
    group = _group(tmp_path, clock, exits)
    assert _run_for(2 * SILENT_SECS, clock, group, quiet=("worker:0",))
    assert exits == [75]


def test_a_peer_that_recorded_finishing_is_not_judged(tmp_path):
    clock, exits = FakeClock(), Exits()
    group = _group(tmp_path, clock, exits, finished=lambda: {"chief:0"})
    assert not _run_for(3 * SILENT_SECS, clock, group, quiet=("chief:0",))
    assert exits == []


def test_storage_that_cannot_be_read_starts_every_silence_again(tmp_path):
    """A storage outage: nothing read, nothing judged, and the silence counted from the
    first good read after it."""
    clock, exits = FakeClock(), Exits()
    group = _group(tmp_path, clock, exits)
    watcher = group["worker:1"]
    chief_record = tmp_path / "trainexec" / "heartbeats" / "chief-0.json"
    kept = chief_record.read_text()
    assert not _run_for(SILENT_SECS - BEAT_SECS, clock, group, quiet=("chief:0",))
    chief_record.unlink()
    chief_record.mkdir()  # reading it fails (IsADirectoryError): an unreadable store
    clock.sleep(BEAT_SECS)
    assert not watcher.check()
    chief_record.rmdir()
    chief_record.write_text(kept)  # the same record as before the outage
    assert not _run_for(SILENT_SECS - BEAT_SECS, clock, group, quiet=("chief:0",))
    assert _run_for(2 * BEAT_SECS, clock, group, quiet=("chief:0",))
    assert exits == [170]


def test_a_peer_that_never_wrote_a_record_is_lost_after_the_same_silence(tmp_path):
    clock, exits = FakeClock(), Exits()
    group = _group(tmp_path, clock, exits)
    (tmp_path / "trainexec" / "heartbeats" / "worker-0.json").unlink()
    assert _run_for(2 * SILENT_SECS, clock, group, quiet=("worker:0",))
    assert exits == [170]


def test_a_failed_write_is_logged_once_and_tried_again(tmp_path, caplog):
    clock, exits = FakeClock(), Exits()
    heartbeats = _heartbeats(tmp_path / "file", "chief:0", clock, exits)
    (tmp_path / "file").write_text("not a directory")
    with caplog.at_level(logging.WARNING, logger="trainexec.tasks.peer_heartbeats"):
        heartbeats.beat()
        heartbeats.beat()
    assert caplog.text.count("chief:0 could not write its heartbeat") == 1


def test_the_daemon_thread_beats_and_watches_only_once_the_group_formed(tmp_path):
    """Before the group's first step a peer may still be starting: nothing is judged."""
    clock, exits = FakeClock(), Exits()
    group = _group(tmp_path, clock, exits)
    watcher = group["worker:1"]
    steps = []

    def on_sleep(clock):
        steps.append(clock.now())
        if len(steps) == 30:
            watcher.group_formed()
        if len(steps) > 60:
            watcher.stop()

    clock.on_sleep = on_sleep
    watcher._run()  # the thread's loop, on the fake clock: no peer ever beats again
    beats = json.loads((tmp_path / "trainexec/heartbeats/worker-1.json").read_text())["beat"]
    assert exits == [170] and watcher.left
    assert 30 < len(steps) <= 30 + SILENT_SECS / BEAT_SECS + 1 and beats == len(steps) + 1


def test_silent_secs_zero_watches_nothing(tmp_path):
    clock, exits = FakeClock(), Exits()
    heartbeats = _heartbeats(tmp_path, "worker:1", clock, exits, silent_secs=0.0)
    heartbeats.group_formed()
    clock.on_sleep = lambda clock: heartbeats.stop() if clock.now() > 2000 else None
    heartbeats._run()
    assert exits == [] and heartbeats.beat_secs == BEAT_SECS


@pytest.mark.parametrize("value, secs", [(None, SILENT_SECS), ("", SILENT_SECS),
                                         ("8", 8.0), ("0", 0.0)])
def test_the_setting(value, secs):
    environ = {} if value is None else {SILENT_SECS_VAR: value}
    assert silent_secs_setting(environ) == secs


def test_the_setting_refuses_what_is_not_seconds():
    with pytest.raises(ConfigError, match=f"{SILENT_SECS_VAR}='soon' must be a number"):
        silent_secs_setting({SILENT_SECS_VAR: "soon"})


def test_a_short_silence_beats_four_times_within_it(tmp_path, monkeypatch):
    monkeypatch.setenv(SILENT_SECS_VAR, "8")
    heartbeats = PeerHeartbeats(str(tmp_path), "chief:0", GROUP)
    assert heartbeats.silent_secs == 8.0 and heartbeats.beat_secs == 2.0
