"""The continuous evaluation's decision: what next, from one look at the world (pure).

`decide(observation, policy)` answers evaluate / wait / skip / stop / fail; the
driver (`trainexec.evaluation.loop.ContinuousEvaluation`) observes and acts.
`LoopPolicy` holds the pacing and stop conditions, validated once.

Example:
    ```python
    decision = decide(Observation(now=5.0, started_at=0.0, latest=None, ...),
                      LoopPolicy(throttle_secs=60))
    if decision.action is Action.WAIT: ...
    ```
"""

from __future__ import annotations

import dataclasses
import enum
import os
from typing import Any

from trainexec.records.checkpoints import CheckpointInfo
from trainexec.records.completion import TrainingComplete
from trainexec.errors import ConfigError
from trainexec.records.run_state import (Finality, checkpoint_finality, is_last_checkpoint,
                                         trusted_completion)
from trainexec.specs import check_poll_secs

__all__ = ["Action", "Decision", "Failure", "FailureKind", "LoopPolicy", "Observation",
           "decide"]


class Action(enum.Enum):
    EVALUATE = "evaluate"
    WAIT = "wait"
    SKIP = "skip"  # give up on the latest checkpoint: it stayed unreadable
    STOP = "stop"
    FAIL = "fail"  # raise the last evaluation's error: it is not the checkpoint's


@dataclasses.dataclass(frozen=True)
class Decision:
    """What to do next.

    `is_final` (EVALUATE): evaluate this checkpoint as the run's last, with the
    final export. `run_over` (STOP): the run's last checkpoint is evaluated, so
    its final export is owed if it has not been made. `warn`: the user should
    hear of it (a stop that leaves the run's last checkpoint unevaluated, or a
    failure).
    """

    action: Action
    reason: str
    wait_secs: float = 0.0
    is_final: bool = False
    run_over: bool = False
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
        `max_steps`), before treating that checkpoint as the last; and once
        that record is in, how long to wait for the checkpoint it names to be
        seen (it was written first, but a cache may show it late) before
        stopping without it.
      stale_record_grace_secs: a completion record written before this
        evaluator started (its file is older than the evaluator's start marker,
        both by the file system's clock) may be left by an earlier run in the
        same model_dir; it is trusted only after this long, time for a new
        run's chief to clear it; one that ends a run of `max_training_steps`
        (this run's, seen by an evaluator restarted after training ended) is
        trusted at once. 0 trusts every record at once (and writes no start
        marker).
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

    @classmethod
    def for_storage(cls, storage: Any, **fields: Any) -> "LoopPolicy":
        """A policy for checkpoints on `storage` (`trainexec.records.storage.Storage`): the
        waits for a record another host writes (the completion record, and the
        grace for a new run's chief to clear an earlier run's) grow by how late
        that storage may show it, so a record seen late never makes a
        non-final checkpoint final."""
        late = storage.visibility_secs
        for name in ("completion_wait_secs", "stale_record_grace_secs"):
            if late and fields.get(name, 1) != 0:
                fields[name] = fields.get(name, getattr(cls, name)) + late
        return cls(**fields)

    def __post_init__(self) -> None:
        for field in ("start_delay_secs", "throttle_secs", "completion_wait_secs",
                      "stale_record_grace_secs", "unreadable_timeout_secs"):
            value = getattr(self, field)
            if value is None or value < 0:
                raise ConfigError(f"`{field}` ({value}) must be >= 0 seconds")
        check_poll_secs(self.poll_secs)
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
    `completion_seen_at` is when the loop first saw the completion record it
    holds. `incomplete_since` is when the latest checkpoint was first seen incomplete
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
    completion_seen_at: float | None = None
    incomplete_since: float | None = None
    incomplete_reason: str = ""
    last_failure: Failure | None = None


def _finality(checkpoint: CheckpointInfo, completion: TrainingComplete | None,
              obs: Observation, policy: LoopPolicy) -> Finality:
    return checkpoint_finality(checkpoint, completion, policy.max_training_steps,
                               obs.max_steps_reached_at, obs.now,
                               policy.completion_wait_secs)


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
    completion = trusted_completion(obs.completion, obs.completion_predates_start,
                                    obs.now - obs.started_at,
                                    policy.stale_record_grace_secs,
                                    policy.max_training_steps)
    idle_for = obs.now - obs.last_new_checkpoint_at
    idle_timed_out = (policy.idle_timeout_secs is not None
                      and idle_for >= policy.idle_timeout_secs)
    delay_left = obs.started_at + policy.start_delay_secs - obs.now
    if delay_left > 0 and completion is None and not idle_timed_out:
        return Decision(Action.WAIT, "start delay", min(delay_left, poll))
    latest = obs.latest
    unseen = _unseen_last_checkpoint(completion, latest)
    if unseen is not None:
        seen_for = obs.now - (obs.completion_seen_at
                              if obs.completion_seen_at is not None else obs.now)
        if seen_for < policy.completion_wait_secs:
            return Decision(Action.WAIT, f"training finished at {unseen}, not seen here "
                            "yet", poll)
        return Decision(Action.STOP, f"training finished at {unseen}, but no such "
                        f"checkpoint was seen in {seen_for:.0f}s of looking (newest seen: "
                        f"{latest.path if latest else 'none'}): no final evaluation or "
                        "export", warn=True)
    if latest is None:
        if completion is not None:
            return Decision(Action.STOP, "training finished but left no checkpoint")
        if idle_timed_out:
            return Decision(Action.STOP, f"no checkpoint appeared in {idle_for:.0f}s")
        return Decision(Action.WAIT, "no checkpoint yet", poll)
    done = obs.last_evaluated
    # The latest checkpoint as it was evaluated, if it was the last one evaluated.
    evaluated = done if done is not None and latest.path == done.path else None
    if evaluated is not None or latest.path in obs.skipped:
        finality = _finality(evaluated if evaluated is not None else latest, completion,
                             obs, policy)
        if finality == Finality.FINAL and evaluated is None:
            return Decision(Action.STOP, f"the last checkpoint of the run, {latest.path}, "
                            "cannot be loaded and was skipped: no final evaluation or "
                            "export", warn=True)
        if finality == Finality.FINAL:
            return Decision(Action.STOP, "the last checkpoint of the run is evaluated",
                            run_over=True)
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
    if finality == Finality.FINAL:
        return _evaluate(obs, policy, "final checkpoint", is_final=True)
    if finality == Finality.ENDING:
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


def _unseen_last_checkpoint(completion: TrainingComplete | None,
                            latest: CheckpointInfo | None) -> str | None:
    """The checkpoint the completion record names when the newest one seen is
    older or none (its writes were seen before the record's, or a read was
    cut short); None when the record names none or it has been seen."""
    if completion is None or not completion.checkpoint:
        return None
    if latest is not None and is_last_checkpoint(latest.path, completion):
        return None
    return completion.checkpoint


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
