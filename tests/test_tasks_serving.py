"""trainexec/tasks/serving.py: a serving task marks its start before its server starts,
then serves until this run's training tasks record finishing, or the chief's completion
record plus the drain says training is over (also for a ps restarted after the end); what
it logs while it waits; and the training peers' wait before leaving. Real records in
`tmp_path`, a fake clock. (Through the executor: tests/test_executor.py.)"""

import logging
import os

import pytest

from fakes import ClockedLog, FakeClock
from trainexec.cluster.config import ClusterConfig
from trainexec.records.completion import record_training_complete
from trainexec.records.finished_tasks import FinishedTasks, record_task_finished
from trainexec.tasks.serving import (PEER_EXIT_WAIT_SECS, ServingJob,
                                     serve_until_training_over, wait_for_tasks_to_finish,
                                     wait_for_training_peers)

pytestmark = pytest.mark.tf_line  # the records are listed with tf.io.gfile

BOTH = ("chief:0", "worker:0")


class StillServing(Exception):
    pass


def _job(model_dir, waited_for=BOTH, drain_secs=0.0, serves=""):
    return ServingJob(task="ps:0", model_dir=str(model_dir), waited_for=frozenset(waited_for),
                      max_steps=20, drain_secs=drain_secs, serves=serves)


def _clock(on_sleep=None, limit=20):
    """A fake clock running `on_sleep[n]()` after the n-th sleep; StillServing after
    `limit` sleeps (a loop that would serve for ever fails instead of hanging)."""
    clock = FakeClock()

    def after_sleep(clock):
        (on_sleep or {}).get(len(clock.sleeps), lambda: None)()
        if len(clock.sleeps) >= limit:
            raise StillServing(f"after {clock.time - 1000:g}s")

    clock.on_sleep = after_sleep
    return clock


def _finished_earlier(model_dir, *tasks):
    """Records of an earlier run (an hour old): written before the serving task started."""
    for task in tasks:
        record_task_finished(str(model_dir), task)
        path = os.path.join(model_dir, "trainexec", "finished", task.replace(":", "-") + ".json")
        os.utime(path, (os.stat(path).st_atime - 3600, os.stat(path).st_mtime - 3600))


def test_the_start_is_marked_before_the_server_starts_and_serving_ends_when_both_finish(
        tmp_path):
    markers = []

    def start_server():
        markers.append(os.listdir(tmp_path / "trainexec" / "started"))
        return "the server"

    clock = _clock({1: lambda: record_task_finished(str(tmp_path), "chief:0"),
                    3: lambda: record_task_finished(str(tmp_path), "worker:0")})
    server, reason = serve_until_training_over(_job(tmp_path), start_server,
                                               latest_step=lambda: None, poll_secs=2.0,
                                               clock=clock)
    assert (server, markers) == ("the server", [["ps-0.json"]])
    assert reason == "every training task has recorded that its training finished"
    assert clock.sleeps == [2.0] * 3  # stops on the first look after worker:0 finished


def test_an_earlier_runs_record_does_not_end_serving_but_this_runs_does(tmp_path, caplog):
    _finished_earlier(tmp_path, "chief:0")
    clock = _clock({2: lambda: record_task_finished(str(tmp_path), "chief:0")})
    with caplog.at_level(logging.INFO, logger="trainexec.tasks.serving"):
        _, reason = serve_until_training_over(_job(tmp_path, waited_for=["chief:0"]),
                                              lambda: None, lambda: None, clock=clock)
    assert reason == "chief:0 recorded that its training finished"
    assert clock.sleeps == [1.0, 1.0]
    assert caplog.messages[0].startswith(
        "ps:0 serves until chief:0 records that its training finished (in ")
    assert caplog.messages[-1] == f"ps:0 stops serving: {reason}"


def test_a_complete_run_waits_out_the_drain_for_a_worker_that_never_finishes(tmp_path,
                                                                              caplog):
    def chief_completes():
        record_training_complete(str(tmp_path), str(tmp_path / "model.ckpt-20"), 20, 20)
        record_task_finished(str(tmp_path), "chief:0")

    clock = _clock({1: chief_completes})
    with caplog.at_level(logging.INFO, logger="trainexec.tasks.serving"):
        _, reason = serve_until_training_over(_job(tmp_path, drain_secs=30), lambda: None,
                                              lambda: None, poll_secs=5.0, clock=clock)
    # Seen over at 5 s; stopped on the first look 30 s after that.
    assert clock.sleeps == [5.0] * 7
    assert reason == ("the chief recorded that training is complete; worker:0 did not "
                      "record finishing within 30s after that")
    assert caplog.messages.count(
        "Training is over: the chief recorded that training is complete") == 1


@pytest.mark.parametrize("latest, record_max_steps, stops", [
    (20, 20, True),   # the run ended: a ps restarted after it stops at once
    (10, 20, False),  # the newest checkpoint is not at max_steps
    (20, 30, False),  # an earlier run's record, with other max_steps
])
def test_a_ps_restarted_after_the_end_stops_at_its_first_look(tmp_path, latest,
                                                              record_max_steps, stops):
    _finished_earlier(tmp_path, *BOTH)
    record_training_complete(str(tmp_path), str(tmp_path / "model.ckpt-20"), 20,
                             record_max_steps)
    path = tmp_path / "trainexec" / "training_complete.json"
    os.utime(path, (path.stat().st_atime - 3600, path.stat().st_mtime - 3600))
    clock = _clock(limit=5)
    serve = lambda: serve_until_training_over(  # noqa: E731
        _job(tmp_path, drain_secs=30), lambda: None, lambda: latest, clock=clock)
    if stops:
        assert serve()[1] == ("the completion record and the latest checkpoint (step 20) "
                              "have reached max_steps 20, and every training task has "
                              "finished")
        assert clock.sleeps == []
    else:
        with pytest.raises(StillServing):
            serve()


def test_it_says_what_it_waits_for_at_the_start_and_once_a_minute(tmp_path):
    clock = _clock(limit=13)
    finished = f"{tmp_path}/trainexec/finished"
    waiting = f"waiting for chief:0, worker:0 to record that training finished (in {finished})"
    with ClockedLog(clock, "trainexec.tasks.serving") as log, pytest.raises(StillServing):
        serve_until_training_over(_job(tmp_path, serves="variables"), lambda: None,
                                  lambda: None, poll_secs=10.0, clock=clock)
    assert log.messages("ps:0") == [
        (1000.0, f"ps:0 serves variables until chief:0, worker:0 record that their training "
                 f"finished (in {finished}), or the chief records that training is complete "
                 f"({tmp_path}/trainexec/training_complete.json)"),
        (1000.0, f"ps:0 serving: {waiting}"),
        (1060.0, f"ps:0 still serving after 60s: {waiting}"),
        (1120.0, f"ps:0 still serving after 120s: {waiting}")]


def test_waiting_for_tasks_gives_up_after_the_timeout_naming_the_missing(tmp_path, caplog):
    watch = FinishedTasks.starting_now(str(tmp_path), "chief:0")
    clock = _clock({1: lambda: record_task_finished(str(tmp_path), "worker:0")})
    with caplog.at_level(logging.WARNING, logger="trainexec.tasks.serving"):
        assert not wait_for_tasks_to_finish(watch, frozenset({"worker:0", "worker:1"}),
                                            timeout_secs=2.0, clock=clock)
    assert clock.sleeps == [0.5] * 4
    assert caplog.messages == ["worker:1 did not record finishing within 2s; leaving anyway"]


def test_a_task_waits_for_its_training_peers_but_not_for_itself(tmp_path, caplog):
    cluster = ClusterConfig(cluster={"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"]},
                            task_type="chief", task_index=0)
    watch = FinishedTasks.starting_now(str(tmp_path), "chief:0")
    clock = _clock({1: lambda: record_task_finished(str(tmp_path), "worker:1"),
                    2: lambda: record_task_finished(str(tmp_path), "worker:0")},
                   limit=int(PEER_EXIT_WAIT_SECS * 2))
    with caplog.at_level(logging.INFO, logger="trainexec.tasks.serving"):
        assert wait_for_training_peers(watch, cluster, clock=clock)
    assert clock.sleeps == [0.5, 0.5]
    assert caplog.messages == ["Waiting for worker:0, worker:1 to finish training before "
                               "leaving"]
