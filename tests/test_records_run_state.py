"""Tests of trainexec.records.run_state: is the run over? (pure decisions, table-driven)."""

import pytest

from trainexec.records.checkpoints import CheckpointInfo
from trainexec.records.completion import TrainingComplete
from trainexec.records.run_state import (Finality, ServingObservation, checkpoint_finality,
                                 completion_for_newest, is_last_checkpoint,
                                 over_at_max_steps, serving_stop_reason, trusted_completion)

pytestmark = pytest.mark.any_line

TASKS = frozenset({"chief:0", "worker:0"})


def record(step=None, checkpoint=None, max_steps=None):
    return TrainingComplete(global_step=step, checkpoint=checkpoint, max_steps=max_steps,
                            finished_at=0.0)


# -- serving: an Estimator ps (waits for every training task, 30 s drain) -------------------

@pytest.mark.parametrize("obs,stops", [
    (dict(missing={"worker:0"}), None),
    (dict(missing=set()), "every training task has recorded"),
    (dict(missing={"worker:0"}, unfinished={"worker:0"}, over="over", over_this_run=True,
          over_since=995), None),
    (dict(missing={"worker:0"}, unfinished={"worker:0"}, over="over", over_this_run=True,
          over_since=970), "over; worker:0 did not record finishing within 30s"),
    (dict(missing={"worker:0"}, unfinished=set(), over="over", over_since=1000),
     "over, and every training task has finished"),
    # Over this run, after this ps restarted: worker:0 finished before the restart (a
    # record older than the ps' marker): 5 s for a newer record, not the 30 s drain.
    (dict(missing={"worker:0"}, unfinished=set(), over="over", over_this_run=True,
          over_since=996), None),
    (dict(missing={"worker:0"}, unfinished=set(), over="over", over_this_run=True,
          over_since=995), "over; worker:0 did not record finishing within 5s"),
    # One with no record at all still gets the whole drain.
    (dict(missing={"chief:0", "worker:0"}, unfinished={"chief:0"}, over="over",
          over_this_run=True, over_since=995), None),
    (dict(missing={"worker:0"}, unfinished={"worker:0"}, over="over", over_since=999), None),
])
def test_ps_decision(obs, stops):
    fields = {k: frozenset(v) if isinstance(v, set) else v for k, v in obs.items()}
    reason = serving_stop_reason(ServingObservation(now=1000, waited_for=TASKS, **fields),
                                 drain_secs=30)
    assert (reason is None) if stops is None else (stops in reason), reason


# -- serving: a ParameterServerStrategy worker or ps (waits for the chief, no drain) ---------

CHIEF = frozenset({"chief:0"})


@pytest.mark.parametrize("obs,stops", [
    (dict(missing=CHIEF), None),
    (dict(missing=frozenset()), "chief:0 recorded that its training finished"),
    # The completion record of this run: over at once.
    (dict(missing=CHIEF, unfinished=CHIEF, over="the chief recorded that training is "
          "complete", over_this_run=True), "training is complete"),
    # A record of any age at max_steps: over at once too, even if the chief
    # never recorded finishing.
    (dict(missing=CHIEF, unfinished=CHIEF, over="reached max_steps 200"),
     "reached max_steps 200"),
])
def test_keras_serving_decision(obs, stops):
    reason = serving_stop_reason(ServingObservation(now=0, waited_for=CHIEF, **obs),
                                 drain_secs=0)
    assert (reason is None) if stops is None else (stops in reason), reason


@pytest.mark.parametrize("done,latest_step,max_steps,over", [
    # A record and checkpoint at max_steps, of any age: the run is over.
    (record(200, max_steps=200), 200, 200, True),
    (record(200, max_steps=200), 240, 200, True),
    # Not over: the checkpoint (or the record) is behind, or no max_steps to compare.
    (record(200, max_steps=200), 180, 200, False),
    (record(100, max_steps=200), None, 200, False),
    (record(200, max_steps=200), 200, None, False),
    (None, 200, 200, False),
    # An earlier run's record, of another max_steps.
    (record(100, max_steps=100), 200, 200, False),
    # A record without a step: the checkpoint decides.
    (record(None, max_steps=200), 200, 200, True),
])
def test_over_at_max_steps(done, latest_step, max_steps, over):
    assert over_at_max_steps(done, latest_step, max_steps) is over


# -- evaluators: is this checkpoint the run's last? ------------------------------------------

@pytest.mark.parametrize("checkpoint,recorded,last", [
    ("/m/model.ckpt-100", "/m/model.ckpt-100", True),
    ("/m/model.ckpt-90", "/m/model.ckpt-100", False),
    ("/m/model.ckpt-110", "/m/model.ckpt-100", True),
    ("/m/ckpt-3.weights.h5", "/m/ckpt-3.weights.h5", True),
    ("/m/ckpt-2.weights.h5", "/m/ckpt-3.weights.h5", False),
    ("/m/ckpt-2-40.keras", "/m/ckpt-2-20.keras", True),
    ("/m/model.ckpt-90", None, True),  # names no checkpoint: the newest is the last
    ("/m/final", "/m/model.ckpt-100", True),  # a name without a number
])
def test_is_last_checkpoint(checkpoint, recorded, last):
    assert is_last_checkpoint(checkpoint, record(checkpoint=recorded)) is last


@pytest.mark.parametrize("step,done,reached_at,now,finality", [
    (100, None, None, 0, Finality.NOT_FINAL),            # below max_steps, no record
    (200, None, 0, 10, Finality.ENDING),                 # at max_steps: await the record
    (200, None, 0, 30, Finality.FINAL),                  # no record came in 30 s
    (200, record(checkpoint="/m/model.ckpt-220"), 0, 1, Finality.NOT_FINAL),
    (220, record(checkpoint="/m/model.ckpt-220"), 0, 1, Finality.FINAL),
])
def test_checkpoint_finality(step, done, reached_at, now, finality):
    info = CheckpointInfo(f"/m/model.ckpt-{step}", step)
    assert checkpoint_finality(info, done, max_steps=200, max_steps_reached_at=reached_at,
                               now=now, completion_wait_secs=30) is finality


@pytest.mark.parametrize("predates,since_start,trusted", [
    (False, 0, True), (True, 10, False), (True, 30, True)])
def test_trusted_completion(predates, since_start, trusted):
    done = record(checkpoint="/m/model.ckpt-1")
    assert (trusted_completion(done, predates, since_start, 30) is done) is trusted


@pytest.mark.parametrize("done,max_steps,trusted", [
    (record(1200, "/m/ckpt-1200", 1200), 1200, True),   # this run's end: an evaluator
    (record(1210, "/m/ckpt-1210", 1200), 1200, True),   # restarted after it trusts it at once
    (record(1200, "/m/ckpt-1200", 1200), 1500, False),  # a run going on to 1500: wait
    (record(1000, "/m/ckpt-1000", 1200), 1200, False),  # ended short of max_steps
    (record(1200, "/m/ckpt-1200", None), 1200, False),  # a record that does not say
    (record(1200, "/m/ckpt-1200", 1200), None, False),  # an asker that does not know
])
def test_a_record_older_than_the_asker_ending_its_max_steps_is_trusted_at_once(
        done, max_steps, trusted):
    assert (trusted_completion(done, True, 1, 30, max_steps) is done) is trusted


@pytest.mark.parametrize("recorded,latest,kept", [
    ("/m/ckpt-3.weights.h5", "/m/ckpt-3.weights.h5", True),
    ("/m/ckpt-3.weights.h5", "/m/ckpt-5.weights.h5", False),  # an earlier run's record
    ("/m/ckpt-5.weights.h5", "/m/ckpt-3.weights.h5", True),
    (None, "/m/ckpt-3.weights.h5", True),
    ("/m/ckpt-3.weights.h5", None, True),
])
def test_completion_for_newest(recorded, latest, kept):
    done = record(checkpoint=recorded)
    assert (completion_for_newest(done, latest) is done) is kept
