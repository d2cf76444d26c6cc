"""trainexec/evaluation/policy.py beyond the decision table of tests/test_evaluation_loop.py:
`LoopPolicy` refusing each bad field by its name, the record waits grown for storage that
shows another host's records late (and what that changes in a decision), waits cut to
what is left of a delay, the flags a stop carries to the driver (`run_over`, `warn`), and
an earlier run's completion record trusted at once only when it ends this evaluator's
own `max_training_steps`. Pure: observations are built by hand, no files, no clock."""

import pytest

from trainexec.errors import ConfigError
from trainexec.evaluation.policy import (Action, Failure, FailureKind, LoopPolicy,
                                         Observation, decide)
from trainexec.records.checkpoints import CheckpointInfo
from trainexec.records.completion import TrainingComplete
from trainexec.records.storage import storage_of

pytestmark = pytest.mark.any_line

C10 = CheckpointInfo("/m/model.ckpt-10", 10)
C20 = CheckpointInfo("/m/model.ckpt-20", 20)


def done(step, checkpoint, max_steps=None):
    return TrainingComplete(global_step=step, checkpoint=checkpoint, max_steps=max_steps,
                            finished_at=0.0)


def look(now=100.0, latest=None, evaluated=None, **fields):
    """One look at the world: started at 0, nothing new since 0, `latest` complete."""
    fields.setdefault("latest_is_complete", True)
    return Observation(now=now, started_at=0.0, latest=latest, last_evaluated=evaluated,
                       last_eval_started_at=fields.pop("last_eval_started_at", None),
                       last_new_checkpoint_at=fields.pop("last_new_checkpoint_at", 0.0),
                       **fields)


WAITS = ("start_delay_secs", "throttle_secs", "completion_wait_secs",
         "stale_record_grace_secs", "unreadable_timeout_secs")


@pytest.mark.parametrize("field", WAITS)
def test_each_wait_refuses_a_negative_or_missing_value_by_its_name(field):
    for bad in (-0.5, None):
        with pytest.raises(ConfigError, match=rf"`{field}` \({bad}\) must be >= 0 seconds"):
            LoopPolicy(**{field: bad})
    assert getattr(LoopPolicy(**{field: 0}), field) == 0  # zero is "no wait", allowed


def test_poll_and_idle_timeout_must_be_positive_numbers():
    for bad in (True, float("nan"), -1, "1"):
        with pytest.raises(ConfigError, match=r"`poll_secs` \(.*\) must be > 0 seconds"):
            LoopPolicy(poll_secs=bad)
    with pytest.raises(ConfigError, match=r"`idle_timeout_secs` \(-5\) must be > 0 "
                       r"seconds or None"):
        LoopPolicy(idle_timeout_secs=-5)
    assert LoopPolicy(idle_timeout_secs=None).idle_timeout_secs is None


def test_storage_showing_records_late_lengthens_only_the_record_waits():
    gcs = storage_of("gs://bucket/run", environ={"GCS_STAT_CACHE_MAX_AGE": "7"})
    assert gcs.visibility_secs == 7.0
    late = LoopPolicy.for_storage(gcs, completion_wait_secs=5, throttle_secs=60,
                                  poll_secs=2, max_training_steps=20)
    assert (late.completion_wait_secs, late.stale_record_grace_secs) == (12, 37)
    assert (late.throttle_secs, late.poll_secs, late.start_delay_secs,
            late.unreadable_timeout_secs) == (60, 2, 0, 60)
    # ckpt-20 reached max_steps 9 s ago: the chief's record may still be in flight there.
    reached = look(now=100, latest=C20, evaluated=C10, max_steps_reached_at=91)
    assert decide(reached, late).action is Action.WAIT
    plain = LoopPolicy(completion_wait_secs=5, poll_secs=2, max_training_steps=20)
    assert decide(reached, plain).is_final
    with pytest.raises(ConfigError, match="`throttle_secs` \\(-1\\)"):
        LoopPolicy.for_storage(gcs, throttle_secs=-1)  # still checked


def test_a_wait_is_cut_to_what_is_left_of_the_start_delay_or_the_throttle():
    policy = LoopPolicy(start_delay_secs=10, throttle_secs=60, poll_secs=5)
    delayed = decide(look(now=9.75), policy)
    assert (delayed.action, delayed.reason, delayed.wait_secs) == (
        Action.WAIT, "start delay", pytest.approx(0.25))
    throttled = decide(look(now=99.6, latest=C20, evaluated=C10,
                            last_eval_started_at=40.0), policy)
    assert (throttled.action, throttled.reason, throttled.wait_secs) == (
        Action.WAIT, "throttled", pytest.approx(0.4))


STOPS = {
    "the last checkpoint evaluated: its final export is owed":
        (look(latest=C20, evaluated=C20, completion=done(20, C20.path)), LoopPolicy(),
         True, False),
    "max_steps evaluated and no record came: owed too":
        (look(latest=C20, evaluated=C20, max_steps_reached_at=50.0),
         LoopPolicy(max_training_steps=20), True, False),
    "idle: nothing owed, nothing to warn of":
        (look(latest=C10, evaluated=C10), LoopPolicy(idle_timeout_secs=60), False, False),
    "finished without a checkpoint":
        (look(completion=done(5, None)), LoopPolicy(), False, False),
    "the last checkpoint skipped as unloadable: warned, no export":
        (look(latest=C20, evaluated=C10, completion=done(20, C20.path),
              skipped=frozenset([C20.path])), LoopPolicy(), False, True),
    "the named last checkpoint never seen: warned, no export":
        (look(latest=C10, evaluated=C10, completion=done(20, C20.path),
              completion_seen_at=0.0), LoopPolicy(), False, True),
}


@pytest.mark.parametrize("name", STOPS)
def test_a_stop_says_whether_the_final_export_is_owed_and_whether_to_warn(name):
    observation, policy, run_over, warn = STOPS[name]
    decision = decide(observation, policy)
    assert decision.action is Action.STOP, decision
    assert (decision.run_over, decision.warn, decision.is_final) == (run_over, warn, False)


def test_an_earlier_record_is_trusted_at_once_only_if_it_ends_this_max_steps():
    policy = LoopPolicy(max_training_steps=20)  # 30 s of grace for a stale record
    for record, action in [(done(20, C20.path, max_steps=20), Action.STOP),
                           (done(20, C20.path, max_steps=40), Action.WAIT),
                           (done(20, C20.path, max_steps=None), Action.WAIT)]:
        seen = look(now=5.0, latest=C20, evaluated=C20, completion=record,
                    completion_predates_start=True)
        decision = decide(seen, policy)
        assert decision.action is action, (record, decision)
        assert decision.run_over is (action is Action.STOP)


def test_the_users_error_is_raised_at_once_even_during_the_start_delay():
    failure = Failure(C10.path, 9.0, FailureKind.ERROR, "NotFoundError: /data/eval.csv")
    decision = decide(look(now=10.0, latest=C10, last_failure=failure),
                      LoopPolicy(start_delay_secs=120))
    assert decision.action is Action.FAIL and decision.warn
    assert "NotFoundError: /data/eval.csv" in decision.reason


def test_an_unreadable_checkpoint_is_skipped_after_its_own_timeout_saying_why():
    seen = look(now=100.0, latest=C10, latest_is_complete=False, incomplete_since=30.0,
                incomplete_reason="missing model.ckpt-10.index")
    assert decide(seen, LoopPolicy(unreadable_timeout_secs=71)).action is Action.WAIT
    skip = decide(seen, LoopPolicy(unreadable_timeout_secs=70))
    assert skip.action is Action.SKIP
    assert skip.reason == ("checkpoint unchanged and unreadable for 70s "
                           "(missing model.ckpt-10.index)")
