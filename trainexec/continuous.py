"""The continuous evaluation loop: start delay, throttle, stop conditions, listeners.

The loop is split in two: `decide(observation, policy)` is a pure function that
answers "what next?" (evaluate / wait / stop), and `ContinuousEvaluation`
observes the world, asks, and acts. Waiting is a wait of at most a short poll
interval (never a busy loop) that a change in a local model directory cuts
short (`trainexec.watch`: inotify), so a new checkpoint is picked up at once; the final checkpoint is evaluated as soon as it is complete,
whatever the throttle; and the loop stops by itself once it has evaluated the
last checkpoint of a finished run, with or without `max_steps`.

Faults, and what the loop does about them:

* a checkpoint that stays incomplete (a writer died) is skipped after
  `unreadable_timeout_secs`; one that looks complete but does not load is
  retried once by its target, then skipped (`CorruptCheckpointError`). When the
  skipped one is the run's last checkpoint the loop stops, naming it;
* a checkpoint deleted from under the evaluator (`keep_checkpoint_max`
  rotation, `CheckpointDisappearedError`) is left for a newer one;
* any other failure of an evaluation is not the checkpoint's fault (a wrong
  eval input path): the loop raises it (see `decide`);
* after a failed attempt the loop waits at least `poll_secs`: it never spins;
* while it waits it says what for, at least once a minute, and the idle timeout
  holds whatever it waits for.

Example::

    loop = ContinuousEvaluation(evaluator, target,
                                LoopPolicy(throttle_secs=60, max_training_steps=1000))
    last_result = loop.run()
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import os
import time
from typing import Any, Callable, Iterable

from trainexec import checkpoints
from trainexec.checkpoints import CheckpointInfo
from trainexec.clock import Clock, SystemClock
from trainexec.completion import (TrainingComplete, atomic_write_text, completion_path,
                                  model_dir_path, read_training_complete)
from trainexec.errors import ConfigError
from trainexec.evaluation import (CheckpointDisappearedError, CorruptCheckpointError,
                                  EvalResult, EvalStatus, EvaluationTarget, Evaluator,
                                  describe_error)
from trainexec.watch import Waiter, waiter_for

__all__ = [
    "START_MARKER",
    "STILL_WAITING_LOG_SECS",
    "Action",
    "CheckpointDisappearedError",
    "ContinuousEvalListener",
    "ContinuousEvaluation",
    "CorruptCheckpointError",
    "Decision",
    "Failure",
    "FailureKind",
    "ListenerList",
    "LoopPolicy",
    "Observation",
    "decide",
]

logger = logging.getLogger(__name__)

# While waiting, the loop says what for at least this often.
STILL_WAITING_LOG_SECS = 60.0
# Written under the model directory when the loop starts: a completion record
# older than it (by the file system's clock) may be an earlier run's.
START_MARKER = "trainexec/started/evaluator.json"


class ContinuousEvalListener:
    """Hooks around each evaluation; return False to stop evaluating.

    Subclass and override what you need::

        class StopAfterThree(ContinuousEvalListener):
            def __init__(self):
                self.count = 0
            def after_eval(self, eval_result):
                self.count += 1
                return self.count < 3
    """

    def before_eval(self) -> bool:
        """Called before each evaluation; False skips it and stops the loop."""
        return True

    def after_eval(self, eval_result: EvalResult) -> bool:
        """Called with each `EvalResult`; False stops the loop."""
        del eval_result
        return True

    def on_skip(self, checkpoint_path: str) -> None:
        """Called when a checkpoint cannot be loaded and is skipped for good."""
        del checkpoint_path


class ListenerList(ContinuousEvalListener):
    """Fans each call out to several listeners; any False stops the loop."""

    def __init__(self, listeners: Iterable[ContinuousEvalListener | None]) -> None:
        self.listeners = [listener for listener in listeners if listener is not None]
        for listener in self.listeners:
            if not isinstance(listener, ContinuousEvalListener):
                raise TypeError(
                    "`continuous_eval_listener` must be a trainexec."
                    f"ContinuousEvalListener, got {type(listener).__name__}")

    def before_eval(self) -> bool:
        return all([listener.before_eval() for listener in self.listeners])

    def after_eval(self, eval_result: EvalResult) -> bool:
        return all([listener.after_eval(eval_result) for listener in self.listeners])

    def on_skip(self, checkpoint_path: str) -> None:
        for listener in self.listeners:
            listener.on_skip(checkpoint_path)


class Action(enum.Enum):
    EVALUATE = "evaluate"
    WAIT = "wait"
    SKIP = "skip"  # give up on the latest checkpoint: it stayed unreadable
    STOP = "stop"
    FAIL = "fail"  # raise the last evaluation's error: it is not the checkpoint's


@dataclasses.dataclass(frozen=True)
class Decision:
    """What to do next. `warn`: the user should hear of it (a stop that leaves
    the run's last checkpoint unevaluated, or a failure)."""

    action: Action
    reason: str
    wait_secs: float = 0.0
    is_final: bool = False
    warn: bool = False


class FailureKind(enum.Enum):
    """Why an evaluation attempt failed."""

    CORRUPT = "corrupt"  # its files are there but do not load: skipped
    DISAPPEARED = "disappeared"  # its files are gone: rotated out by the trainer
    ERROR = "error"  # its files are all there: not the checkpoint's fault


@dataclasses.dataclass(frozen=True)
class Failure:
    """The last failed evaluation attempt: of which checkpoint, when, why."""

    path: str
    at: float
    kind: FailureKind
    message: str = ""


@dataclasses.dataclass(frozen=True)
class LoopPolicy:
    """How the loop paces itself and when it gives up.

    Attributes:
      start_delay_secs: wait this long before the first evaluation (cut short
        when training has already finished).
      throttle_secs: minimum seconds between evaluation starts (not applied to
        the final checkpoint).
      poll_secs: how often to look for a new checkpoint while waiting.
      max_training_steps: a checkpoint at or past this step is the last one.
      idle_timeout_secs: stop after this long without a new checkpoint (None:
        never), whatever the loop waits for (start delay, throttle, a checkpoint
        still being written, the chief's completion record); a complete
        checkpoint not yet evaluated is evaluated first.
      completion_wait_secs: once a checkpoint reaches `max_training_steps`, how
        long to wait for the chief's completion record, which names the real
        last checkpoint (asynchronous workers can push the chief one save past
        `max_steps`), before treating that checkpoint as the last.
      stale_record_grace_secs: a completion record written before this
        evaluator started (its file is older than the evaluator's start marker,
        both by the file system's clock) may be left by an earlier run in the
        same model_dir; it is trusted only after this long, time for a new
        run's chief to clear it. 0 trusts every record at once (and writes no
        start marker).
      unreadable_timeout_secs: a checkpoint that still looks incomplete (files
        missing, an unreadable index or HDF5 file, a zip without its directory)
        after this long with none of its files changing is reported and skipped:
        a writer that died left it so.
    """

    start_delay_secs: float = 0.0
    throttle_secs: float = 0.0
    poll_secs: float = 1.0
    max_training_steps: int | None = None
    idle_timeout_secs: float | None = None
    completion_wait_secs: float = 30.0
    stale_record_grace_secs: float = 30.0
    unreadable_timeout_secs: float = 60.0

    def __post_init__(self) -> None:
        for field in ("start_delay_secs", "throttle_secs", "completion_wait_secs",
                      "stale_record_grace_secs", "unreadable_timeout_secs"):
            value = getattr(self, field)
            if value is None or value < 0:
                raise ConfigError(f"`{field}` ({value}) must be >= 0 seconds")
        if self.poll_secs is None or self.poll_secs <= 0:
            raise ConfigError(
                f"`poll_secs` ({self.poll_secs}) must be > 0 seconds, e.g. 1.0")
        if self.idle_timeout_secs is not None and self.idle_timeout_secs <= 0:
            raise ConfigError(
                f"`idle_timeout_secs` ({self.idle_timeout_secs}) must be > 0 seconds "
                "or None to wait for new checkpoints forever")


@dataclasses.dataclass(frozen=True)
class Observation:
    """What the loop saw on one look at the world.

    `completion_predates_start` says the completion record was written before
    this evaluator started; `max_steps_reached_at` is when the loop first saw a
    checkpoint at or past `max_training_steps` (None: not yet).
    `incomplete_since` is when the latest checkpoint was first seen incomplete
    in its present state (its files unchanged since), and `incomplete_reason`
    why it is incomplete. `last_failure` is the last failed evaluation attempt
    (None after a success).
    """

    now: float
    started_at: float
    latest: CheckpointInfo | None
    latest_is_complete: bool
    last_evaluated: CheckpointInfo | None
    last_eval_started_at: float | None
    last_new_checkpoint_at: float
    completion: TrainingComplete | None = None
    skipped: frozenset = frozenset()
    completion_predates_start: bool = False
    max_steps_reached_at: float | None = None
    incomplete_since: float | None = None
    incomplete_reason: str = ""
    last_failure: Failure | None = None


_FINAL, _ENDING, _NOT_FINAL = "final", "ending", "not final"


def _trusted_completion(obs: Observation, policy: LoopPolicy) -> TrainingComplete | None:
    if obs.completion is None:
        return None
    if (obs.completion_predates_start
            and obs.now - obs.started_at < policy.stale_record_grace_secs):
        return None  # maybe an earlier run's record, about to be cleared
    return obs.completion


def _is_last(checkpoint: CheckpointInfo, completion: TrainingComplete) -> bool:
    """Whether `checkpoint` is (or is past) the one the completion record names.

    Names are compared with names, so the numbering need not be training steps
    (Keras numbers by epoch or save). The record is written after training
    returns: one that names no checkpoint means the newest is the last, and so
    does a name without a number.
    """
    if not completion.checkpoint:
        return True
    if os.path.basename(completion.checkpoint) == os.path.basename(checkpoint.path):
        return True
    # Numbers from names on both sides: `checkpoint.step` may hold the training
    # step (an evaluated checkpoint), which Keras names do not carry.
    number = checkpoints.checkpoint_order(checkpoint.path)
    recorded = checkpoints.checkpoint_order(completion.checkpoint)
    return number is None or recorded is None or number >= recorded


def _finality(checkpoint: CheckpointInfo, completion: TrainingComplete | None,
              obs: Observation, policy: LoopPolicy) -> str:
    if completion is not None:
        return _FINAL if _is_last(checkpoint, completion) else _NOT_FINAL
    max_steps = policy.max_training_steps
    if not (max_steps and checkpoint.step is not None and checkpoint.step >= max_steps):
        return _NOT_FINAL
    reached = obs.max_steps_reached_at
    if reached is not None and obs.now - reached >= policy.completion_wait_secs:
        return _FINAL  # no record came (a chief that keeps none): max_steps decides
    return _ENDING


def decide(obs: Observation, policy: LoopPolicy) -> Decision:
    """The next step of the loop, from what it observed (pure).

    Failed attempts (`obs.last_failure`):

    * a checkpoint that disappeared (its files are gone: the trainer rotated it
      out) or was skipped as corrupt is not retried; the next evaluation, of
      whatever checkpoint is then the latest, starts no sooner than `poll_secs`
      after the failure, so a failing evaluation never turns into a busy loop;
    * any other failure, in particular a `NotFoundError` while the checkpoint's
      files are all there, is the user's (a wrong eval input path, a missing
      vocabulary file): FAIL, and the driver re-raises the original error at
      once, as `tf.estimator`'s evaluator does. Retrying cannot fix it, and a
      retry count would only delay the real error and hide it behind a loop.

    The idle timeout (`idle_timeout_secs` without a new checkpoint) holds in
    every state: during the start delay and the throttle a pending complete
    checkpoint is evaluated at once and the loop stops after it; a checkpoint
    at `max_training_steps` whose completion record is not in is evaluated as
    the last; one still incomplete ends the loop, named.
    """
    failure = obs.last_failure
    if failure is not None and failure.kind is FailureKind.ERROR:
        return Decision(Action.FAIL, f"evaluating {failure.path} failed, and its files "
                        "are all there, so the error is not the checkpoint's (a wrong "
                        f"eval input path?): {failure.message}", warn=True)
    poll = policy.poll_secs
    completion = _trusted_completion(obs, policy)
    idle_for = obs.now - obs.last_new_checkpoint_at
    idle_timed_out = (policy.idle_timeout_secs is not None
                      and idle_for >= policy.idle_timeout_secs)
    delay_left = obs.started_at + policy.start_delay_secs - obs.now
    if delay_left > 0 and completion is None and not idle_timed_out:
        return Decision(Action.WAIT, "start delay", min(delay_left, poll))
    latest = obs.latest
    if latest is None:
        if completion is not None:
            return Decision(Action.STOP, "training finished but left no checkpoint")
        if idle_timed_out:
            return Decision(Action.STOP, f"no checkpoint appeared in {idle_for:.0f}s")
        return Decision(Action.WAIT, "no checkpoint yet", poll)
    done = obs.last_evaluated
    evaluated = done is not None and latest.path == done.path
    if evaluated or latest.path in obs.skipped:
        finality = _finality(done if evaluated else latest, completion, obs, policy)
        if finality == _FINAL and not evaluated:
            return Decision(Action.STOP, f"the last checkpoint of the run, {latest.path}, "
                            "cannot be loaded and was skipped: no final evaluation or "
                            "export", warn=True)
        if finality == _FINAL:
            return Decision(Action.STOP, "the last checkpoint of the run is evaluated",
                            is_final=True)
        if idle_timed_out:
            return Decision(Action.STOP, f"no new checkpoint in {idle_for:.0f}s")
        return Decision(Action.WAIT, "no new checkpoint", poll)
    if not obs.latest_is_complete:
        since = obs.incomplete_since
        if since is not None and obs.now - since >= policy.unreadable_timeout_secs:
            return Decision(Action.SKIP, f"checkpoint unchanged and unreadable for "
                            f"{obs.now - since:.0f}s ({obs.incomplete_reason})")
        if idle_timed_out:
            return Decision(Action.STOP, f"no new checkpoint in {idle_for:.0f}s, and the "
                            f"latest, {latest.path}, is still incomplete "
                            f"({obs.incomplete_reason})", warn=True)
        return Decision(Action.WAIT, "checkpoint still being written", poll)
    finality = _finality(latest, completion, obs, policy)
    if finality == _FINAL:
        return _evaluate(obs, policy, "final checkpoint", is_final=True)
    if finality == _ENDING:
        if idle_timed_out:
            return _evaluate(obs, policy, f"max_steps reached and no newer checkpoint in "
                             f"{idle_for:.0f}s: it is the last", is_final=True)
        return Decision(Action.WAIT, "max_steps reached: waiting for the chief's "
                        "completion record naming the last checkpoint", poll)
    if obs.last_eval_started_at is not None and not idle_timed_out:
        throttle_left = obs.last_eval_started_at + policy.throttle_secs - obs.now
        if throttle_left > 0:
            return Decision(Action.WAIT, "throttled", min(throttle_left, poll))
    return _evaluate(obs, policy, "new checkpoint")


def _evaluate(obs: Observation, policy: LoopPolicy, reason: str,
              is_final: bool = False) -> Decision:
    """EVALUATE, once `poll_secs` have passed since a failed attempt."""
    failure = obs.last_failure
    if failure is not None:
        left = failure.at + policy.poll_secs - obs.now
        if left > 0:
            return Decision(Action.WAIT, "pausing after the failed evaluation of "
                            f"{os.path.basename(failure.path)}", left)
    return Decision(Action.EVALUATE, reason, is_final=is_final)


class ContinuousEvaluation:
    """Drives `decide`: observes, evaluates, waits and stops.

    When it starts it writes `<model_dir>/trainexec/started/evaluator.json`
    (`START_MARKER`): a completion record whose file is older than that marker,
    both times from the same file system, may be an earlier run's, whatever the
    clocks of the chief's and this machine say. Where it cannot write there (a
    read-only model directory) it compares the record's `finished_at` with this
    machine's clock instead, and warns.

    Args:
      evaluator: the one-pass `Evaluator` (evaluation and exporters).
      target: the model whose checkpoints are watched.
      policy: pacing and stop conditions.
      listener: a `ContinuousEvalListener` (or None).
      clock: time source; tests pass a fake one.
      waiter: how the loop waits (`trainexec.watch.Waiter`); default: watching
        a local model directory on the real clock, else sleeping on `clock`.
      completion_filter: given the completion record (or None) and the latest
        checkpoint path read just after it, returns the record to act on;
        SidecarEvaluator drops an earlier run's record there.
      already_evaluated: checkpoint info evaluated before a restart, if any.
      already_skipped: checkpoints skipped as unloadable before a restart.
    """

    def __init__(self, evaluator: Evaluator, target: EvaluationTarget,
                 policy: LoopPolicy, listener: ContinuousEvalListener | None = None,
                 clock: Clock | None = None,
                 completion_filter: Callable[[TrainingComplete | None, str | None],
                                             TrainingComplete | None] | None = None,
                 already_evaluated: CheckpointInfo | None = None,
                 already_skipped: Iterable[str] = (),
                 waiter: Waiter | None = None) -> None:
        self._evaluator = evaluator
        self._target = target
        self._policy = policy
        self._listener = listener or ContinuousEvalListener()
        self._clock = clock or SystemClock()
        self._waiter = waiter
        self._completion_filter = completion_filter
        self.last_evaluated = already_evaluated
        self.evaluations = 0
        self.skipped: set[str] = set(already_skipped)
        self.stop_reason = ""
        self._last_eval_started_at: float | None = None
        self._max_steps_reached_at: float | None = None
        self._started_wall_time = 0.0
        self._started_marker_nsec: int | None = None  # the start marker's mtime
        self._predates: tuple[TrainingComplete, bool] | None = None  # for this record
        self._last_seen_path: str | None = None
        self._complete_path: str | None = None  # the last path found complete
        # The latest checkpoint while it looks incomplete: (path, file state),
        # since when, and why.
        self._incomplete: tuple[Any, float, str] | None = None
        self._last_new_at = 0.0
        self._failure: Failure | None = None
        self._failure_error: BaseException | None = None
        self._last_reason = ""
        self._reason_since = 0.0
        self._last_logged_at = 0.0
        if already_evaluated is not None:
            evaluator.previous_checkpoint_path = already_evaluated.path

    @property
    def last_result(self) -> EvalResult | None:
        """The last successful evaluation (kept by the evaluator)."""
        return self._evaluator.last_result

    @property
    def last_export_results(self) -> list:
        """What the exporters returned for it, final export included."""
        return self._evaluator.last_export_results

    def observe(self, started_at: float) -> Observation:
        now = self._clock.now()
        completion = read_training_complete(self._target.model_dir)
        if completion is not None and not completion.matches(self._policy.max_training_steps):
            completion = None
        path = self._target.latest_checkpoint()  # after the record: it names no newer one
        if self._completion_filter is not None:
            completion = self._completion_filter(completion, path)
        latest = CheckpointInfo.from_path(path) if path else None
        if path != self._last_seen_path:
            self._last_seen_path, self._last_new_at = path, now
        max_steps = self._policy.max_training_steps
        if (self._max_steps_reached_at is None and max_steps and latest is not None
                and latest.step is not None and latest.step >= max_steps):
            self._max_steps_reached_at = now
        fresh = latest is not None and latest.path not in self.skipped and (
            self.last_evaluated is None or latest.path != self.last_evaluated.path)
        complete = not fresh or self._is_complete(latest.path, now)
        incomplete = None if complete else self._incomplete
        return Observation(
            now=now, started_at=started_at, latest=latest, latest_is_complete=complete,
            last_evaluated=self.last_evaluated,
            last_eval_started_at=self._last_eval_started_at,
            last_new_checkpoint_at=self._last_new_at, completion=completion,
            skipped=frozenset(self.skipped),
            completion_predates_start=(completion is not None
                                       and self._predates_start(completion)),
            max_steps_reached_at=self._max_steps_reached_at,
            incomplete_since=incomplete[1] if incomplete else None,
            incomplete_reason=incomplete[2] if incomplete else "",
            last_failure=self._failure)

    def _mark_start(self) -> None:
        """Writes the start marker and keeps its file time (see the class doc)."""
        import tensorflow as tf

        self._started_wall_time = time.time()
        self._started_marker_nsec = None
        if self._policy.stale_record_grace_secs <= 0:
            return  # every record is trusted at once: no need to tell their age
        marker = model_dir_path(str(self._target.model_dir), START_MARKER)
        try:
            atomic_write_text(marker, json.dumps({"started_at": self._started_wall_time,
                                                  "pid": os.getpid()}))
            self._started_marker_nsec = _mtime_nsec(marker)
        except (tf.errors.OpError, OSError) as err:
            logger.warning(
                "Cannot write the evaluator's start marker %s (%s): whether a completion "
                "record is an earlier run's is judged by the chief's clock (its "
                "`finished_at`) against this machine's clock instead, which is wrong by "
                "any skew between the two", marker, describe_error(err))

    def _predates_start(self, completion: TrainingComplete) -> bool:
        """Whether the completion record was written before this loop started."""
        import tensorflow as tf

        if self._predates is not None and self._predates[0] == completion:
            return self._predates[1]
        if self._started_marker_nsec is None:
            return completion.finished_at < self._started_wall_time
        try:
            written = _mtime_nsec(completion_path(str(self._target.model_dir)))
        except (tf.errors.OpError, OSError):
            return True  # cleared since it was read: a new run is starting
        # A tie (file times can be whole seconds) counts as older: trusting an
        # earlier run's record would stop the evaluator before the new run's end,
        # doubting this run's costs only `stale_record_grace_secs`.
        predates = written <= self._started_marker_nsec
        self._predates = (completion, predates)
        return predates

    def _is_complete(self, path: str, now: float) -> bool:
        # A complete checkpoint stays complete: check its files once, not every poll.
        if path == self._complete_path:
            return True
        reason = checkpoints.incomplete_reason(path)
        if reason is None:
            self._complete_path, self._incomplete = path, None
            return True
        state = (path, checkpoints.file_state(path))
        if self._incomplete is None or self._incomplete[0] != state:
            self._incomplete = (state, now, reason)  # changed: the wait starts again
        else:
            self._incomplete = (state, self._incomplete[1], reason)
        return False

    def run(self) -> EvalResult | None:
        """Evaluates until a stop condition holds; returns the last result.

        Raises the error of an evaluation that failed through no fault of its
        checkpoint (see `decide`).
        """
        own_waiter = self._waiter is None
        waiter = self._waiter or waiter_for(str(self._target.model_dir), self._clock)
        try:
            return self._run(waiter)
        finally:
            if own_waiter:
                waiter.close()

    def _run(self, waiter: Waiter) -> EvalResult | None:
        started_at = self._clock.now()
        self._mark_start()
        self._last_new_at = started_at
        while True:
            obs = self.observe(started_at)
            decision = decide(obs, self._policy)
            self._log(decision, obs)
            if decision.action is Action.FAIL:
                self.stop_reason = decision.reason
                error, self._failure_error = self._failure_error, None
                raise error
            if decision.action is Action.STOP:
                self.stop_reason = decision.reason
                self._finish_final_export(decision)
                return self.last_result
            if decision.action is Action.WAIT:
                waiter.wait(decision.wait_secs)
                continue
            if decision.action is Action.SKIP:
                self._skip(obs.latest.path, decision.reason)
                continue
            if not self._evaluate(obs.latest, decision.is_final):
                return self.last_result

    def _evaluate(self, checkpoint: CheckpointInfo, is_final: bool) -> bool:
        """One evaluation; False when the loop must stop."""
        import tensorflow as tf

        if not self._listener.before_eval():
            self.stop_reason = "ContinuousEvalListener.before_eval asked to stop"
            logger.info("Exiting evaluation, as requested by %s.before_eval.",
                        type(self._listener).__name__)
            return False
        started = self._clock.now()
        try:
            result, _ = self._evaluator.evaluate_and_export(
                checkpoint.path, is_final=is_final, check_complete=False)
        except CorruptCheckpointError as err:
            self._failed(checkpoint.path, FailureKind.CORRUPT, err)
            self._skip(checkpoint.path, str(err))
            return True
        except CheckpointDisappearedError as err:
            self._disappeared(checkpoint.path, err)
            return True
        except tf.errors.NotFoundError as err:
            # A target that does not tell the two apart: the files decide.
            if checkpoints.disappeared(checkpoint.path):
                self._disappeared(checkpoint.path, err)
            else:
                self._failed(checkpoint.path, FailureKind.ERROR, err)
            return True
        if result.status != EvalStatus.EVALUATED:
            return True
        self._failure = None
        self._last_eval_started_at = started
        self._last_reason = ""
        self.evaluations += 1
        self.last_evaluated = CheckpointInfo(checkpoint.path, result.global_step)
        logger.info("Evaluated %s (step %s) in %.1fs: %s", checkpoint.path,
                    result.global_step, self._clock.now() - started,
                    _format_metrics(result.metrics))
        if not self._listener.after_eval(result):
            self.stop_reason = "ContinuousEvalListener.after_eval asked to stop"
            logger.info("Exiting evaluation, as requested by %s.after_eval.",
                        type(self._listener).__name__)
            return False
        if self._evaluator.is_final_export_triggered:
            self.stop_reason = "the last checkpoint of the run is evaluated"
            logger.info("Exiting evaluation: final checkpoint %s evaluated.",
                        checkpoint.path)
            return False
        return True

    def _failed(self, path: str, kind: FailureKind, error: BaseException) -> None:
        self._failure = Failure(path, self._clock.now(), kind, describe_error(error))
        self._failure_error = error if kind is FailureKind.ERROR else None

    def _disappeared(self, path: str, error: BaseException) -> None:
        self._failed(path, FailureKind.DISAPPEARED, error)
        if self._complete_path == path:
            self._complete_path = None  # look at its files again if it is still named
        cause = error.__cause__ if isinstance(error, CheckpointDisappearedError) else None
        logger.warning("Checkpoint %s disappeared before it could be evaluated (the "
                       "trainer's keep_checkpoint_max rotated it out?); moving on to a "
                       "newer one: %s", path, describe_error(cause or error))

    def _skip(self, path: str, why: str) -> None:
        self.skipped.add(path)
        self._listener.on_skip(path)
        logger.error("Skipping checkpoint %s: it cannot be loaded (%s)", path, why)

    def _finish_final_export(self, decision: Decision) -> None:
        # The last checkpoint may have been evaluated before training was known
        # to be over; its exports then still owe the final one.
        result = self.last_result
        if (decision.is_final and result is not None
                and not self._evaluator.is_final_export_triggered):
            self._evaluator.export_final(result)

    def _log(self, decision: Decision, obs: Observation) -> None:
        """One line per new reason; while waiting, again every STILL_WAITING_LOG_SECS."""
        now = obs.now
        if decision.reason != self._last_reason:
            self._last_reason, self._reason_since = decision.reason, now
        elif (decision.action is not Action.WAIT
              or now - self._last_logged_at < STILL_WAITING_LOG_SECS):
            return
        self._last_logged_at = now
        if decision.action is Action.WAIT:
            logger.info("Evaluator waiting%s: %s (%s)", _for(now - self._reason_since),
                        decision.reason, _waiting_details(obs, self._policy))
        elif decision.action is Action.FAIL:
            logger.error("Evaluator failing: %s", decision.reason)
        elif decision.action is Action.STOP:
            log = logger.warning if decision.warn else logger.info
            log("Evaluator stopping: %s", decision.reason)


def _mtime_nsec(path: str) -> int:
    """A file's modification time by its file system's clock: from `os.stat` for
    a local file (TensorFlow's stat rounds it to seconds there), else TensorFlow's."""
    if "://" not in path:
        return os.stat(path).st_mtime_ns
    import tensorflow as tf

    return tf.io.gfile.stat(path).mtime_nsec


def _for(secs: float) -> str:
    return f" for {secs:.0f}s" if secs >= 1 else ""


def _waiting_details(obs: Observation, policy: LoopPolicy) -> str:
    details = [f"latest checkpoint: {obs.latest.path if obs.latest else 'none'}"]
    if obs.latest is not None and not obs.latest_is_complete and obs.incomplete_reason:
        details.append(obs.incomplete_reason)
    if policy.idle_timeout_secs is not None:
        left = obs.last_new_checkpoint_at + policy.idle_timeout_secs - obs.now
        details.append(f"idle timeout in {max(left, 0):.0f}s")
    return "; ".join(details)


def _format_metrics(metrics: dict[str, Any]) -> str:
    def show(value: Any) -> str:
        try:
            return f"{float(value):.6g}"
        except (TypeError, ValueError):
            return str(value)
    return ", ".join(f"{k} = {show(v)}" for k, v in sorted(metrics.items()))
