"""The continuous loop: the pure `decide` table, and the driver on real checkpoint
files with a fake clock (no real sleeping)."""

import glob
import logging
import os

import pytest
import tensorflow as tf

from trainexec.records.checkpoints import CheckpointInfo, is_complete
from trainexec.records.completion import TrainingComplete, record_training_complete
from trainexec.evaluation.loop import START_MARKER, ContinuousEvaluation
from trainexec.evaluation.policy import (
    Action,
    Decision,
    Failure,
    FailureKind,
    LoopPolicy,
    Observation,
    decide)
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.errors import ConfigError
from trainexec.evaluation.one_pass import Evaluator
from fakes import (AttemptGuard, ClockedLog, DirectoryTarget, FakeClock,
                   FinalOnlyExporter, RecordingExporter, point_state_file_at,
                   write_checkpoint)

pytestmark = pytest.mark.tf_line

C10 = CheckpointInfo("/m/model.ckpt-10", 10)
C20 = CheckpointInfo("/m/model.ckpt-20", 20)
DONE20 = TrainingComplete(global_step=20, checkpoint=C20.path, max_steps=None, finished_at=0)
# Keras numbers checkpoints by epoch: ckpt-4 after 40 training steps. The loop
# knows an evaluated checkpoint by its training step (K3_DONE, K4_DONE).
K3, K4 = CheckpointInfo("/k/ckpt-3", 3), CheckpointInfo("/k/ckpt-4", 4)
K3_DONE, K4_DONE = CheckpointInfo("/k/ckpt-3", 30), CheckpointInfo("/k/ckpt-4", 40)
KERAS_DONE = TrainingComplete(global_step=40, checkpoint="/k/ckpt-4", max_steps=None,
                              finished_at=0)
# A record written elsewhere: the same checkpoint under another mount point.
DONE20_ELSEWHERE = TrainingComplete(global_step=20, checkpoint="/mnt/m/model.ckpt-20",
                                    max_steps=None, finished_at=0)
DONE_NO_NAME = TrainingComplete(global_step=999, checkpoint=None, max_steps=None,
                                finished_at=0)


def obs(now=100.0, started_at=0.0, latest=None, complete=True, evaluated=None,
        last_eval_at=None, last_new_at=0.0, completion=None, skipped=(), predates=False,
        max_reached_at=None, incomplete_since=None, failure=None, completion_seen_at=None):
    if not complete and incomplete_since is None:
        incomplete_since = now
    return Observation(now=now, started_at=started_at, latest=latest,
                       latest_is_complete=complete, last_evaluated=evaluated,
                       last_eval_started_at=last_eval_at, last_new_checkpoint_at=last_new_at,
                       completion=completion, skipped=frozenset(skipped),
                       completion_predates_start=predates,
                       max_steps_reached_at=max_reached_at,
                       completion_seen_at=completion_seen_at,
                       incomplete_since=incomplete_since,
                       incomplete_reason="" if complete else "missing ckpt.index",
                       last_failure=failure)


def failed(checkpoint, at, kind):
    return Failure(checkpoint.path, at, kind, "NotFoundError: /data/eval.tfrecord; No such "
                   "file or directory")


POLICY = LoopPolicy(start_delay_secs=0, throttle_secs=600, poll_secs=1.0)
TABLE = [
    ("start delay", obs(now=10), LoopPolicy(start_delay_secs=120), Action.WAIT, 1.0),
    ("start delay cut short when done", obs(now=10, latest=C20, completion=DONE20),
     LoopPolicy(start_delay_secs=120), Action.EVALUATE, 0.0),
    ("no checkpoint yet", obs(), POLICY, Action.WAIT, 1.0),
    ("done, naming no checkpoint, none seen", obs(completion=DONE_NO_NAME), POLICY,
     Action.STOP, 0.0),
    # The record names model.ckpt-20, which a stale or cut-short read hides: not
    # "no checkpoint" until completion_wait_secs (30) after the record was seen.
    ("done at ckpt-20, none seen yet", obs(completion=DONE20, completion_seen_at=90),
     POLICY, Action.WAIT, 1.0),
    ("done at ckpt-20, older one seen", obs(latest=C10, evaluated=C10, completion=DONE20,
                                             completion_seen_at=90), POLICY, Action.WAIT, 1.0),
    ("done at ckpt-20, unseen for completion_wait_secs: stop, warned",
     obs(completion=DONE20, completion_seen_at=70), POLICY, Action.STOP, 0.0),
    ("done at ckpt-20, only ckpt-10 seen for completion_wait_secs: stop, warned",
     obs(latest=C10, evaluated=C10, completion=DONE20, completion_seen_at=70), POLICY,
     Action.STOP, 0.0),
    ("first checkpoint", obs(latest=C10), POLICY, Action.EVALUATE, 0.0),
    ("incomplete checkpoint", obs(latest=C10, complete=False), POLICY, Action.WAIT, 1.0),
    ("incomplete and unchanged, not yet for long",
     obs(latest=C10, complete=False, incomplete_since=41), POLICY, Action.WAIT, 1.0),
    ("incomplete and unchanged for unreadable_timeout_secs: give it up",
     obs(latest=C10, complete=False, incomplete_since=40), POLICY, Action.SKIP, 0.0),
    ("throttled", obs(latest=C20, evaluated=C10, last_eval_at=99.5), POLICY, Action.WAIT, 1.0),
    ("throttle elapsed", obs(now=700, latest=C20, evaluated=C10, last_eval_at=99),
     POLICY, Action.EVALUATE, 0.0),
    ("throttle 0 still polls when nothing is new",
     obs(latest=C10, evaluated=C10, last_eval_at=99.9), LoopPolicy(throttle_secs=0),
     Action.WAIT, 1.0),
    ("final bypasses throttle", obs(latest=C20, evaluated=C10, last_eval_at=99.5,
                                    completion=DONE20), POLICY, Action.EVALUATE, 0.0),
    ("max_steps reached: wait for the chief's record naming the last checkpoint",
     obs(latest=C20, evaluated=C10, last_eval_at=99.5, max_reached_at=95),
     LoopPolicy(throttle_secs=600, max_training_steps=20), Action.WAIT, 1.0),
    ("max_steps reached, no record came: final, bypassing the throttle",
     obs(latest=C20, evaluated=C10, last_eval_at=99.5, max_reached_at=70),
     LoopPolicy(throttle_secs=600, max_training_steps=20), Action.EVALUATE, 0.0),
    ("record from before this evaluator: not trusted at once",
     obs(now=10, latest=C20, evaluated=C20, completion=DONE20, predates=True), POLICY,
     Action.WAIT, 1.0),
    ("record from before this evaluator: trusted after the grace",
     obs(now=31, latest=C20, evaluated=C20, completion=DONE20, predates=True), POLICY,
     Action.STOP, 0.0),
    ("stale record does not cut the start delay short",
     obs(now=10, latest=C20, completion=DONE20, predates=True),
     LoopPolicy(start_delay_secs=120), Action.WAIT, 1.0),
    ("final evaluated: stop", obs(latest=C20, evaluated=C20, completion=DONE20), POLICY,
     Action.STOP, 0.0),
    ("done before final evaluated: evaluate it", obs(latest=C20, evaluated=C10,
     completion=DONE20), POLICY, Action.EVALUATE, 0.0),
    ("max_steps evaluated, no record came: stop", obs(latest=C20, evaluated=C20,
     max_reached_at=50), LoopPolicy(max_training_steps=20), Action.STOP, 0.0),
    ("no new checkpoint, not done", obs(latest=C10, evaluated=C10), POLICY, Action.WAIT, 1.0),
    ("idle timeout", obs(now=100, latest=C10, evaluated=C10, last_new_at=40),
     LoopPolicy(idle_timeout_secs=60), Action.STOP, 0.0),
    ("corrupt last checkpoint of a finished run", obs(latest=C20, evaluated=C10,
     completion=DONE20, skipped=[C20.path]), POLICY, Action.STOP, 0.0),
    ("corrupt last checkpoint, idle timeout long past: still a stop",
     obs(latest=C20, evaluated=C10, completion=DONE20, skipped=[C20.path], last_new_at=0),
     LoopPolicy(idle_timeout_secs=10), Action.STOP, 0.0),
    ("corrupt checkpoint, run goes on", obs(latest=C20, evaluated=C10, skipped=[C20.path]),
     POLICY, Action.WAIT, 1.0),
    ("the record names checkpoints, not steps: epoch-numbered last one is final",
     obs(latest=K4, evaluated=K3_DONE, last_eval_at=99.5, completion=KERAS_DONE), POLICY,
     Action.EVALUATE, 0.0),
    ("epoch-numbered last one evaluated: stop",
     obs(latest=K4, evaluated=K4_DONE, completion=KERAS_DONE), POLICY, Action.STOP, 0.0),
    ("an earlier epoch is not the last, whatever its training step",
     obs(latest=K3, evaluated=K3_DONE, completion=KERAS_DONE), POLICY, Action.WAIT, 1.0),
    ("the record's checkpoint under another directory name",
     obs(latest=C20, evaluated=C20, completion=DONE20_ELSEWHERE), POLICY, Action.STOP, 0.0),
    ("a record naming no checkpoint: the newest is the last",
     obs(latest=C10, evaluated=C10, completion=DONE_NO_NAME), POLICY, Action.STOP, 0.0),
    # Failed attempts: never straight back to "evaluate".
    ("a checkpoint just disappeared: pause poll_secs before the newer one",
     obs(latest=C20, evaluated=None, failure=failed(C10, 99.75, FailureKind.DISAPPEARED)),
     POLICY, Action.WAIT, 0.75),
    ("a checkpoint just skipped as corrupt: pause before the newer one",
     obs(latest=C20, failure=failed(C10, 99.5, FailureKind.CORRUPT)), POLICY, Action.WAIT,
     0.5),
    ("the final checkpoint right after a failure: pause too",
     obs(latest=C20, completion=DONE20, failure=failed(C10, 99.5, FailureKind.DISAPPEARED)),
     POLICY, Action.WAIT, 0.5),
    ("poll_secs after a failed attempt: evaluate",
     obs(latest=C20, failure=failed(C10, 99, FailureKind.DISAPPEARED)), POLICY,
     Action.EVALUATE, 0.0),
    ("an error while the checkpoint's files are all there is the user's: raise it",
     obs(latest=C10, failure=failed(C10, 100, FailureKind.ERROR)), POLICY, Action.FAIL, 0.0),
    ("the user's error is raised even with a newer checkpoint to evaluate",
     obs(latest=C20, evaluated=None, failure=failed(C10, 50, FailureKind.ERROR)), POLICY,
     Action.FAIL, 0.0),
    # The idle timeout holds in every waiting state.
    ("idle timeout during the start delay, no checkpoint: stop",
     obs(now=70), LoopPolicy(start_delay_secs=120, idle_timeout_secs=60), Action.STOP, 0.0),
    ("idle timeout during the start delay: the pending checkpoint is evaluated first",
     obs(now=70, latest=C10), LoopPolicy(start_delay_secs=120, idle_timeout_secs=60),
     Action.EVALUATE, 0.0),
    ("idle timeout during the start delay, checkpoint evaluated before a restart: stop",
     obs(now=70, latest=C10, evaluated=C10),
     LoopPolicy(start_delay_secs=120, idle_timeout_secs=60), Action.STOP, 0.0),
    ("idle timeout while a checkpoint is still being written: stop, naming it",
     obs(latest=C10, complete=False, incomplete_since=95, last_new_at=30),
     LoopPolicy(idle_timeout_secs=60), Action.STOP, 0.0),
    ("idle timeout while waiting for the chief's record: evaluate it as the last",
     obs(latest=C20, evaluated=C10, last_eval_at=20, max_reached_at=30, last_new_at=30),
     LoopPolicy(max_training_steps=20, completion_wait_secs=120, idle_timeout_secs=60),
     Action.EVALUATE, 0.0),
    ("idle timeout while throttled: evaluate the pending checkpoint, then stop",
     obs(latest=C20, evaluated=C10, last_eval_at=20, last_new_at=30),
     LoopPolicy(throttle_secs=600, idle_timeout_secs=60), Action.EVALUATE, 0.0),
]


@pytest.mark.parametrize("name,observation,policy,action,wait", TABLE,
                         ids=[row[0] for row in TABLE])
def test_decide(name, observation, policy, action, wait):
    decision = decide(observation, policy)
    assert decision.action is action, decision
    assert decision.wait_secs == pytest.approx(wait)
    if action is Action.WAIT:
        assert decision.wait_secs > 0  # waiting always sleeps: never a busy loop


def test_final_decision_is_flagged():
    assert decide(obs(latest=C20, completion=DONE20), POLICY) == Decision(
        Action.EVALUATE, "final checkpoint", is_final=True)


@pytest.mark.parametrize("observation,policy,words", [
    (obs(completion=DONE20, completion_seen_at=70), POLICY,
     [C20.path, "no such checkpoint was seen in 30s", "newest seen: none", "no final"]),
    (obs(latest=C20, evaluated=C10, completion=DONE20, skipped=[C20.path]), POLICY,
     [C20.path, "cannot be loaded and was skipped", "no final"]),
    (obs(latest=C10, failure=failed(C10, 100, FailureKind.ERROR)), POLICY,
     [C10.path, "files are all there", "/data/eval.tfrecord; No such file"]),
    (obs(latest=C10, complete=False, incomplete_since=95, last_new_at=30),
     LoopPolicy(idle_timeout_secs=60), [C10.path, "still incomplete", "missing ckpt.index"]),
    (obs(latest=C20, evaluated=C10, last_eval_at=20, max_reached_at=30, last_new_at=30),
     LoopPolicy(max_training_steps=20, completion_wait_secs=120, idle_timeout_secs=60),
     ["max_steps reached", "it is the last"]),
])
def test_decisions_a_user_must_hear_of_say_why(observation, policy, words):
    decision = decide(observation, policy)
    for word in words:
        assert word in decision.reason
    assert decision.warn or decision.is_final


@pytest.mark.parametrize("kwargs,words", [
    (dict(poll_secs=0), "`poll_secs` (0) must be > 0"),
    (dict(throttle_secs=-1), "`throttle_secs` (-1) must be >= 0"),
    (dict(idle_timeout_secs=0), "`idle_timeout_secs` (0) must be > 0"),
])
def test_bad_policy(kwargs, words):
    with pytest.raises(ConfigError) as info:
        LoopPolicy(**kwargs)
    assert words in str(info.value)


# -- the driver, on real checkpoint files ----------------------------------------------

class Trainer:
    """Writes checkpoints (and the completion record) as fake time passes."""

    def __init__(self, model_dir, schedule, done_at=None, done_step=None, max_steps=None):
        self.model_dir = str(model_dir)
        self.schedule = sorted(schedule)  # [(time, step)]
        self.done_at, self.done_step, self.max_steps = done_at, done_step, max_steps

    def __call__(self, clock):
        while self.schedule and self.schedule[0][0] <= clock.now():
            _, step = self.schedule.pop(0)
            point_state_file_at(self.model_dir, write_checkpoint(self.model_dir, step))
        if self.done_at is not None and clock.now() >= self.done_at:
            self.done_at = None
            prefix = os.path.join(self.model_dir, f"model.ckpt-{self.done_step}")
            record_training_complete(self.model_dir, prefix, self.done_step, self.max_steps)


def make_loop(tmp_path, clock, policy, exporters=(), listener=None, max_steps=None):
    target = TimedTarget(str(tmp_path), clock)
    evaluator = Evaluator(target, exporters, max_steps, clock)
    return target, ContinuousEvaluation(evaluator, target, policy, listener, clock)


class TimedTarget(DirectoryTarget):
    """Records when each checkpoint was evaluated, and that it was complete then."""

    def __init__(self, model_dir, clock):
        super().__init__(model_dir, clock)
        self.times = []

    def evaluate(self, checkpoint_path):
        assert is_complete(checkpoint_path), f"evaluated incomplete {checkpoint_path}"
        self.times.append(self._clock.now())
        return super().evaluate(checkpoint_path)


def test_throttle_zero_sleeps_instead_of_spinning(tmp_path):
    clock = FakeClock(0.0)
    clock.on_sleep = Trainer(tmp_path, [(300, 10)], done_at=300, done_step=10)
    _, loop = make_loop(tmp_path, clock, LoopPolicy(throttle_secs=0, poll_secs=1.0))
    loop.run()
    # 300 idle seconds cost ~300 one-second sleeps, not a spin of zero-length waits.
    assert all(s > 0 for s in clock.sleeps)
    assert 295 <= len(clock.sleeps) <= 305
    assert loop.evaluations == 1


def test_exits_after_last_checkpoint_without_max_steps(tmp_path):
    clock = FakeClock(0.0)
    clock.on_sleep = Trainer(tmp_path, [(5, 10), (20, 20), (40, 30)], done_at=41,
                             done_step=30)
    latest, final = RecordingExporter("latest"), FinalOnlyExporter("final")
    target, loop = make_loop(tmp_path, clock, LoopPolicy(throttle_secs=0),
                             exporters=[latest, final])
    result = loop.run()
    assert result.global_step == 30
    assert [os.path.basename(p) for p in target.evaluated] == [
        "model.ckpt-10", "model.ckpt-20", "model.ckpt-30"]
    # ckpt-30 was evaluated before the completion record appeared. The final
    # exporter, which declined it then, gets its final export; the latest
    # exporter, which exported it already, is not called twice.
    assert [(c["step"], c["final"]) for c in latest.calls] == [
        (10, False), (20, False), (30, False)]
    assert [(c["step"], c["final"]) for c in final.calls] == [
        (10, False), (20, False), (30, False), (30, True)]
    assert loop.last_export_results == [
        os.path.join(str(tmp_path), "export", n) for n in ("latest", "final")]
    assert clock.now() <= 43  # stopped right away, did not wait for more


def test_final_checkpoint_evaluated_at_once_despite_long_throttle(tmp_path):
    clock = FakeClock(0.0)
    clock.on_sleep = Trainer(tmp_path, [(1, 10), (30, 20)], done_at=30, done_step=20)
    target, loop = make_loop(tmp_path, clock, LoopPolicy(throttle_secs=600))
    loop.run()
    assert len(target.times) == 2
    assert target.times[1] <= 31  # not 600 s after the first evaluation


def test_max_steps_final_export(tmp_path):
    clock = FakeClock(0.0)
    clock.on_sleep = Trainer(tmp_path, [(1, 50), (2, 100)])
    exporter = RecordingExporter()
    target, loop = make_loop(tmp_path, clock, LoopPolicy(throttle_secs=60),
                             exporters=[exporter], max_steps=100)
    loop.run()
    assert exporter.calls[-1]["final"] and exporter.calls[-1]["step"] == 100
    assert exporter.calls[-1]["export_path"] == os.path.join(str(tmp_path), "export",
                                                             "recorder")


def half_written_checkpoint(tmp_path, step=10):
    """A checkpoint at `step` whose data is written but not its index, named by the state
    file: (its prefix, `finish()`, which writes the index and records the run complete
    at it, once)."""
    prefix = write_checkpoint(str(tmp_path), step)
    held = str(tmp_path / "held.index")
    os.rename(prefix + ".index", held)  # data written, index not yet
    point_state_file_at(str(tmp_path), prefix)

    def finish():
        if not os.path.exists(prefix + ".index"):
            os.rename(held, prefix + ".index")
            record_training_complete(str(tmp_path), prefix, step, None)
    return prefix, finish


def test_never_evaluates_half_written_checkpoint(tmp_path):
    clock = FakeClock(0.0)
    prefix, finish = half_written_checkpoint(tmp_path)
    clock.on_sleep = lambda c: c.now() >= 20 and finish()
    # The state file already names it: tf.train.latest_checkpoint needs the index,
    # so use a target that trusts the state file like a copy-based file system.
    target, loop = make_loop(tmp_path, clock, LoopPolicy(throttle_secs=0))
    target.latest_checkpoint = lambda: prefix
    loop.run()
    assert target.times == [20.0]


def test_checkpoint_left_incomplete_is_skipped_and_named(tmp_path, caplog):
    # The writer died after the data shard: the index never comes. The loop gives
    # it up after unreadable_timeout_secs (not sooner, not never) and says why.
    clock = FakeClock(0.0)
    prefix = write_checkpoint(str(tmp_path), 10)
    os.remove(prefix + ".index")
    point_state_file_at(str(tmp_path), prefix)
    record_training_complete(str(tmp_path), prefix, 10, None)
    target, loop = make_loop(tmp_path, clock, LoopPolicy(unreadable_timeout_secs=45,
                                                         stale_record_grace_secs=0))
    target.latest_checkpoint = lambda: prefix
    with caplog.at_level(logging.INFO):
        loop.run()
    assert target.times == [] and loop.skipped == {prefix}
    assert 45 <= clock.now() <= 47
    assert "cannot be loaded and was skipped" in loop.stop_reason
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and prefix in errors[0] and "model.ckpt-10.index" in errors[0]


def test_incomplete_checkpoint_whose_files_change_is_waited_for(tmp_path):
    # A slow writer: the shard grows for 100 s, beyond unreadable_timeout_secs.
    clock = FakeClock(0.0)
    prefix, finish = half_written_checkpoint(tmp_path)
    shard = prefix + ".data-00000-of-00001"

    def keep_writing(c):
        if c.now() < 100:
            with open(shard, "ab") as f:
                f.write(b"")  # same size, but a new modification time
            os.utime(shard, ns=(int(c.now() * 1e9) + 1, int(c.now() * 1e9) + 1))
        else:
            finish()
    clock.on_sleep = keep_writing
    target, loop = make_loop(tmp_path, clock, LoopPolicy(unreadable_timeout_secs=30))
    target.latest_checkpoint = lambda: prefix
    loop.run()
    assert loop.skipped == set() and len(target.times) == 1 and target.times[0] >= 100


def test_stale_completion_of_other_run_is_ignored(tmp_path):
    clock = FakeClock(0.0)
    record_training_complete(str(tmp_path), None, 100, max_steps=100)  # older run
    clock.on_sleep = Trainer(tmp_path, [(1, 100), (5, 200)])
    target, loop = make_loop(tmp_path, clock, LoopPolicy(max_training_steps=200),
                             max_steps=200)
    loop.run()
    assert [os.path.basename(p) for p in target.evaluated][-1] == "model.ckpt-200"


def test_start_delay_then_evaluate(tmp_path):
    clock = FakeClock(0.0)
    clock.on_sleep = Trainer(tmp_path, [(1, 10), (200, 20)], done_at=200, done_step=20)
    target, loop = make_loop(tmp_path, clock, LoopPolicy(start_delay_secs=120))
    loop.run()
    assert target.times[0] >= 120


class StopBefore(ContinuousEvalListener):
    def before_eval(self):
        return False


class StopAfterOne(ContinuousEvalListener):
    def __init__(self):
        self.results = []

    def after_eval(self, eval_result):
        self.results.append(eval_result)
        return False


def test_listener_before_eval_stops(tmp_path):
    clock = FakeClock(0.0)
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 10))
    target, loop = make_loop(tmp_path, clock, LoopPolicy(), listener=StopBefore())
    loop.run()
    assert target.evaluated == [] and "before_eval" in loop.stop_reason


def test_listener_after_eval_stops(tmp_path):
    clock = FakeClock(0.0)
    clock.on_sleep = Trainer(tmp_path, [(0, 10), (1, 20)])
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 5))
    listener = StopAfterOne()
    target, loop = make_loop(tmp_path, clock, LoopPolicy(), listener=listener)
    loop.run()
    assert len(target.evaluated) == 1 and listener.results[0].global_step == 5


def test_idle_timeout_stops(tmp_path):
    clock = FakeClock(0.0)
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 10))
    target, loop = make_loop(tmp_path, clock, LoopPolicy(idle_timeout_secs=30))
    loop.run()
    assert len(target.evaluated) == 1 and 30 <= clock.now() <= 32
    assert "no new checkpoint in" in loop.stop_reason


def test_checkpoint_rotated_away_is_not_fatal(tmp_path):
    clock = FakeClock(0.0)
    clock.on_sleep = Trainer(tmp_path, [(3, 20)], done_at=3, done_step=20)
    target, loop = make_loop(tmp_path, clock, LoopPolicy())
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 10))
    calls = []
    original = target.evaluate

    def flaky(path):
        import tensorflow as tf
        calls.append(path)
        if len(calls) == 1:  # the trainer deletes it as the evaluator starts on it
            for name in glob.glob(path + ".*"):
                os.remove(name)
            raise tf.errors.NotFoundError(None, None, "model.ckpt-10.index not found")
        return original(path)
    target.evaluate = flaky
    result = loop.run()
    assert result.global_step == 20


def test_overshoot_past_max_steps_evaluates_the_real_last_checkpoint(tmp_path):
    # Asynchronous workers push the chief past max_steps=300 between its last two
    # saves (301, then 303 when training ends); the chief's record names 303.
    clock = FakeClock(0.0)
    clock.on_sleep = Trainer(tmp_path, [(1, 100), (5, 301), (6, 303)], done_at=7,
                             done_step=303, max_steps=300)
    final = FinalOnlyExporter()
    target, loop = make_loop(tmp_path, clock, LoopPolicy(max_training_steps=300),
                             exporters=[final], max_steps=300)
    result = loop.run()
    assert result.global_step == 303
    assert [os.path.basename(p) for p in target.evaluated] == ["model.ckpt-100",
                                                               "model.ckpt-303"]
    assert [(c["step"], c["final"]) for c in final.calls] == [(100, False), (303, True)]


def test_earlier_runs_record_does_not_stop_a_new_run(tmp_path):
    from trainexec.records.completion import clear_training_complete
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 100))
    record_training_complete(str(tmp_path), str(tmp_path / "model.ckpt-100"), 100, None)
    clock = FakeClock(0.0)
    trainer = Trainer(tmp_path, [(10, 110), (20, 120)], done_at=21, done_step=120)

    def new_run(c):
        if c.now() >= 3:  # the new run's chief starts and clears the old record
            clear_training_complete(str(tmp_path))
            c.on_sleep = trainer
    clock.on_sleep = new_run
    target, loop = make_loop(tmp_path, clock, LoopPolicy())
    result = loop.run()
    assert result.global_step == 120
    assert "model.ckpt-120" in os.path.basename(target.evaluated[-1])


# -- failed attempts: never busy, and the user's errors surface --------------------------

def test_not_found_while_the_checkpoint_is_there_is_raised_at_once(tmp_path, caplog):
    # A typo in the eval input path: every evaluation raises NotFoundError, and the
    # checkpoint's files are all there. The original error surfaces at once.
    clock = FakeClock(0.0)
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 10))
    guard = AttemptGuard(5)  # stops a loop that would spin forever
    target, loop = make_loop(tmp_path, clock, LoopPolicy(), listener=guard)
    typo = tf.errors.NotFoundError(None, None, "/data/evl.tfrecord; No such file or directory")

    def evaluate(path):
        target.evaluated.append(path)
        raise typo
    target.evaluate = evaluate
    with caplog.at_level(logging.INFO), pytest.raises(tf.errors.NotFoundError) as info:
        loop.run()
    assert info.value is typo
    assert len(target.evaluated) == 1 and clock.now() == 0
    messages = [r.getMessage() for r in caplog.records]
    assert not any("disappeared" in m for m in messages)
    errors = [m for m in messages if "Evaluator failing" in m]
    assert len(errors) == 1 and "/data/evl.tfrecord" in errors[0]
    assert str(tmp_path / "model.ckpt-10") in errors[0]


def test_a_checkpoint_that_disappeared_is_not_retried_in_a_busy_loop(tmp_path, caplog):
    # The state file still names ckpt-10 after its files are gone (a copy-based
    # file system, or a trainer between deleting and updating it); ckpt-20 comes
    # at t=5 with the completion record.
    clock = FakeClock(0.0)
    prefix10 = write_checkpoint(str(tmp_path), 10)
    point_state_file_at(str(tmp_path), prefix10)
    exporter = FinalOnlyExporter()
    guard = AttemptGuard(20)
    target, loop = make_loop(tmp_path, clock, LoopPolicy(poll_secs=1.0), [exporter], guard)
    named = [prefix10]
    target.latest_checkpoint = lambda: named[0]
    original = target.evaluate

    def evaluate(path):
        if path == prefix10:
            target.evaluated.append(path)
            for name in glob.glob(prefix10 + ".*"):
                os.remove(name)  # rotated out as the evaluator starts on it
            raise tf.errors.NotFoundError(None, None, "model.ckpt-10.index not found")
        return original(path)
    target.evaluate = evaluate

    def trainer(c):
        if c.now() >= 5 and named[0] == prefix10:
            named[0] = write_checkpoint(str(tmp_path), 20)
            record_training_complete(str(tmp_path), named[0], 20, None)
    clock.on_sleep = trainer
    with caplog.at_level(logging.WARNING):
        result = loop.run()
    assert result.global_step == 20
    assert target.evaluated.count(prefix10) == 1  # not once per poll, not 200 times
    assert all(s > 0 for s in clock.sleeps) and 5 <= clock.now() <= 7
    assert [(c["step"], c["final"]) for c in exporter.calls] == [(20, True)]
    warnings = [r.getMessage() for r in caplog.records if "disappeared" in r.getMessage()]
    assert len(warnings) == 1 and prefix10 in warnings[0]


# -- never silent: every waiting state says so at least once a minute, and the
# -- idle timeout holds in each ------------------------------------------------------

def _withheld_index(tmp_path):
    """ckpt-10 whose writer is alive but stuck: its index never comes, its shard
    keeps being touched (so it is never given up as unreadable)."""
    prefix = write_checkpoint(str(tmp_path), 10)
    os.rename(prefix + ".index", str(tmp_path / "held.index"))
    point_state_file_at(str(tmp_path), prefix)
    shard = prefix + ".data-00000-of-00001"

    def keep_touching(c):
        os.utime(shard, ns=(int(c.now() * 1e9) + 1, int(c.now() * 1e9) + 1))
    return prefix, keep_touching


IDLE = 300
WAITING_STATES = {
    "start delay": dict(start_delay_secs=1000),
    "no checkpoint yet": dict(),
    "checkpoint still being written": dict(unreadable_timeout_secs=60),
    "throttled": dict(throttle_secs=1000),
    "waiting for the chief's completion record": dict(max_training_steps=20,
                                                      completion_wait_secs=1000),
}


@pytest.mark.parametrize("state", list(WAITING_STATES))
def test_every_waiting_state_logs_once_a_minute_and_ends_at_the_idle_timeout(tmp_path,
                                                                            state):
    clock = FakeClock(0.0)
    exporter = RecordingExporter()
    policy = LoopPolicy(poll_secs=1.0, idle_timeout_secs=IDLE, **WAITING_STATES[state])
    target, loop = make_loop(tmp_path, clock, policy, [exporter],
                             max_steps=policy.max_training_steps)
    actions = []
    if state == "checkpoint still being written":
        prefix, touch = _withheld_index(tmp_path)
        target.latest_checkpoint = lambda: prefix
        actions.append(touch)
    elif state == "throttled":
        point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 10))
        actions.append(Trainer(tmp_path, [(10, 20)]))
    elif state == "waiting for the chief's completion record":
        point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 20))

    def on_sleep(c):
        for action in actions:
            action(c)
        assert c.now() < 5000, "the idle timeout did not hold"
    clock.on_sleep = on_sleep
    with ClockedLog(clock) as log:
        loop.run()
    waits = [t for t, _ in log.messages("Evaluator waiting")]
    assert waits and waits[0] <= 10
    gaps = [b - a for a, b in zip(waits, waits[1:])]
    assert max(gaps, default=0) <= 60 + policy.poll_secs, gaps
    assert clock.now() - waits[-1] <= 60 + policy.poll_secs  # said so till the end
    last_new = 10 if state == "throttled" else 0
    assert last_new + IDLE <= clock.now() <= last_new + IDLE + 2 * policy.poll_secs
    assert all(s > 0 for s in clock.sleeps)
    if state == "waiting for the chief's completion record":
        # Evaluated as the last checkpoint, with its final export, then done.
        assert [(c["step"], c["final"]) for c in exporter.calls] == [(20, True)]
        return
    assert any(f"{IDLE}s" in m for _, m in log.messages("Evaluator stopping")), log.lines[-3:]
    if state == "checkpoint still being written":
        assert str(prefix) in loop.stop_reason and "still incomplete" in loop.stop_reason
    if state == "throttled":  # the pending checkpoint is evaluated, not dropped
        assert [c["step"] for c in exporter.calls] == [10, 20]


def test_waiting_log_names_what_it_waits_for(tmp_path, caplog):
    clock = FakeClock(0.0)
    prefix, touch = _withheld_index(tmp_path)

    def on_sleep(c):
        touch(c)
        assert c.now() < 1000, "the idle timeout did not hold"
    clock.on_sleep = on_sleep
    target, loop = make_loop(tmp_path, clock, LoopPolicy(idle_timeout_secs=90))
    target.latest_checkpoint = lambda: prefix
    with caplog.at_level(logging.INFO, logger="trainexec.evaluation.loop"):
        loop.run()
    waits = [r.getMessage() for r in caplog.records
             if r.getMessage().startswith("Evaluator waiting")]
    assert len(waits) == 2  # at t=0 and t=60
    assert "checkpoint still being written" in waits[1] and prefix in waits[1]
    assert "missing model.ckpt-10.index" in waits[1] and "for 60s" in waits[1]
    assert "idle timeout in 30s" in waits[1]


# -- an earlier run's completion record, told by file times --------------------------

def _new_run(tmp_path, clock_start=3):
    """A new run's chief clears the old record at t=3, then saves 110 and 120 and
    records its end at t=21."""
    from trainexec.records.completion import clear_training_complete
    trainer = Trainer(tmp_path, [(10, 110), (20, 120)], done_at=21, done_step=120)

    def new_run(c):
        if c.now() >= clock_start:
            clear_training_complete(str(tmp_path))
            c.on_sleep = trainer
    return new_run


def test_earlier_runs_record_is_told_by_file_time_not_the_chiefs_clock(tmp_path):
    # The earlier run's chief had a clock an hour ahead: by `finished_at` its record
    # looks written after this evaluator started. Its file is older than the start.
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 100))
    import time
    record_training_complete(str(tmp_path), str(tmp_path / "model.ckpt-100"), 100, None,
                             wall_time=time.time() + 3600)
    record = os.path.join(str(tmp_path), "trainexec", "training_complete.json")
    an_hour_ago = time.time() - 3600
    os.utime(record, (an_hour_ago, an_hour_ago))
    clock = FakeClock(0.0)
    clock.on_sleep = _new_run(tmp_path)
    target, loop = make_loop(tmp_path, clock, LoopPolicy())
    result = loop.run()
    assert result.global_step == 120
    assert [os.path.basename(p) for p in target.evaluated][-1] == "model.ckpt-120"
    assert os.path.exists(os.path.join(str(tmp_path), *START_MARKER.split("/")))


def test_new_record_from_a_chief_whose_clock_is_behind_is_trusted_at_once(tmp_path):
    # This run's chief has a clock an hour behind: by `finished_at` its record looks
    # older than this evaluator. Its file is newer than the start marker.
    import time
    clock = FakeClock(0.0)

    def chief(c):
        if c.now() >= 2 and not os.path.exists(str(tmp_path / "model.ckpt-10.index")):
            point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 10))
            record_training_complete(str(tmp_path), str(tmp_path / "model.ckpt-10"), 10,
                                     None, wall_time=time.time() - 3600)
    clock.on_sleep = chief
    exporter = RecordingExporter()
    target, loop = make_loop(tmp_path, clock, LoopPolicy(stale_record_grace_secs=30),
                             [exporter])
    loop.run()
    assert clock.now() <= 3  # not the 30 s grace for a record from before the start
    assert [(c["step"], c["final"]) for c in exporter.calls] == [(10, True)]


def test_read_only_model_dir_falls_back_to_the_wall_clock(tmp_path, caplog):
    # The start marker cannot be written (here: a file where its directory goes).
    os.makedirs(str(tmp_path / "trainexec"))
    (tmp_path / "trainexec" / "started").write_text("")
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 100))
    record_training_complete(str(tmp_path), str(tmp_path / "model.ckpt-100"), 100, None)
    clock = FakeClock(0.0)
    clock.on_sleep = _new_run(tmp_path)
    target, loop = make_loop(tmp_path, clock, LoopPolicy())
    with caplog.at_level(logging.WARNING):
        result = loop.run()
    assert result.global_step == 120  # the earlier run's record was not trusted at once
    warnings = [r.getMessage() for r in caplog.records if "start marker" in r.getMessage()]
    assert len(warnings) == 1 and "clock" in warnings[0]


class FlakyStorageTarget(TimedTarget):
    """Its storage answers `errno_` to the first `failures` listings."""

    def __init__(self, model_dir, clock, failures, errno_):
        super().__init__(model_dir, clock)
        self.failures, self.errno_ = failures, errno_

    def latest_checkpoint(self):
        if self.failures:
            self.failures -= 1
            raise OSError(self.errno_, os.strerror(self.errno_), self.model_dir)
        return super().latest_checkpoint()


def _flaky_loop(tmp_path, clock, failures, errno_):
    point_state_file_at(str(tmp_path), write_checkpoint(str(tmp_path), 10))
    record_training_complete(str(tmp_path), str(tmp_path / "model.ckpt-10"), 10, None)
    target = FlakyStorageTarget(str(tmp_path), clock, failures, errno_)
    evaluator = Evaluator(target, (), None, clock)
    return target, ContinuousEvaluation(evaluator, target, LoopPolicy(poll_secs=5.0), None,
                                        clock)


def test_a_storage_that_fails_for_a_while_is_waited_out(tmp_path, caplog, monkeypatch):
    import errno
    monkeypatch.setenv("TRAINEXEC_STORAGE_STALL_SECS", "60")
    clock = FakeClock(0.0)
    target, loop = _flaky_loop(tmp_path, clock, failures=4, errno_=errno.EIO)
    with caplog.at_level(logging.WARNING):
        result = loop.run()
    assert result.global_step == 10
    assert target.times[0] >= 20  # four 5-second looks before the evaluation
    assert clock.now() <= 35  # then as without a fault (its settling waits: 30 s)
    said = [r.getMessage() for r in caplog.records if "looking again" in r.getMessage()]
    assert len(said) == 4 and "storage unavailable" in said[0]


def test_a_storage_that_keeps_failing_ends_the_evaluator_at_its_bound(tmp_path, monkeypatch):
    import errno
    monkeypatch.setenv("TRAINEXEC_STORAGE_STALL_SECS", "60")
    clock = FakeClock(0.0)
    _, loop = _flaky_loop(tmp_path, clock, failures=10_000, errno_=errno.EIO)
    with pytest.raises(OSError) as raised:
        loop.run()
    assert raised.value.errno == errno.EIO
    assert 60 <= clock.now() <= 66


def test_a_permanent_storage_error_is_not_waited_for(tmp_path, monkeypatch):
    import errno
    clock = FakeClock(0.0)
    _, loop = _flaky_loop(tmp_path, clock, failures=1, errno_=errno.ENOSPC)
    with pytest.raises(OSError):
        loop.run()
    assert clock.now() == 0.0
