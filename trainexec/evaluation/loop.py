"""The continuous evaluation loop: start delay, throttle, stop conditions, listeners.

`ContinuousEvaluation` observes the world, asks the pure
`trainexec.evaluation.policy.decide` "what next?" (evaluate / wait / stop), and
acts. Waiting is a wait of at most a short poll
interval (never a busy loop) that a change in a local model directory cuts
short (`trainexec.evaluation.watch`: inotify), so a new checkpoint is picked up at once; the final checkpoint is evaluated as soon as it is complete,
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

Example:
    ```python
    loop = ContinuousEvaluation(evaluator, target,
                                LoopPolicy(throttle_secs=60, max_training_steps=1000))
    last_result = loop.run()
    ```
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Iterable

from trainexec.records.storage import NETWORK, storage_of
from trainexec.records import checkpoints
from trainexec.records.checkpoints import CheckpointInfo
from trainexec.clock import Clock, SystemClock
from trainexec.contract.storage_faults import storage_fault
from trainexec.contract.storage_watch import stall_bound
from trainexec.records.completion import TrainingComplete, completion_path, read_training_complete
from trainexec.evaluation.final_export import FinalExportSettler
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.evaluation.one_pass import EvalResult, EvalStatus, Evaluator
from trainexec.evaluation.policy import (Action, Decision, Failure, FailureKind, LoopPolicy,
                                         Observation, decide)
from trainexec.evaluation.target import (CheckpointDisappearedError, CorruptCheckpointError,
                                         EvaluationTarget, describe_error)
from trainexec.evaluation.watch import Waiter, waiter_for
from trainexec.records.layout import (EVALUATOR_STARTED_FILE, RECORDS_DIR, make_watched_dir,
                                     mtime_nsec, record_path, write_json)

__all__ = ["START_MARKER", "STILL_WAITING_LOG_SECS", "ContinuousEvaluation"]

logger = logging.getLogger(__name__)

# While waiting, the loop says what for at least this often.
STILL_WAITING_LOG_SECS = 60.0
# Written under the model directory when the loop starts: a completion record
# older than it (by the file system's clock) may be an earlier run's.
START_MARKER = EVALUATOR_STARTED_FILE
# How long a transient storage fault is waited out when the storage has no stall
# bound (TRAINEXEC_STORAGE_STALL_SECS=0 or a local directory).
_STORAGE_RETRY_SECS = 120.0


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
      waiter: how the loop waits (`trainexec.evaluation.watch.Waiter`); default: watching
        a local model directory on the real clock, else sleeping on `clock`.
      completion_filter: given the completion record (or None) and the latest
        checkpoint path read just after it, returns the record to act on;
        SidecarEvaluator drops an earlier run's record there.
      already_evaluated: checkpoint info evaluated before a restart, if any.
      already_skipped: checkpoints skipped as unloadable before a restart.
      settler: settles the run's final export
        (`trainexec.evaluation.final_export.FinalExportSettler`; default: one
        that keeps no record). It hears of each evaluation before `listener`.
    """

    def __init__(self, evaluator: Evaluator, target: EvaluationTarget,
                 policy: LoopPolicy, listener: ContinuousEvalListener | None = None,
                 clock: Clock | None = None,
                 completion_filter: Callable[[TrainingComplete | None, str | None],
                                             TrainingComplete | None] | None = None,
                 already_evaluated: CheckpointInfo | None = None,
                 already_skipped: Iterable[str] = (),
                 waiter: Waiter | None = None,
                 settler: FinalExportSettler | None = None) -> None:
        self._evaluator = evaluator
        self._settler = settler or FinalExportSettler(evaluator)
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
        self._completion_seen: tuple[TrainingComplete, float] | None = None  # and since
        self._last_seen_path: str | None = None
        self._complete_path: str | None = None  # the last path found complete
        # The latest checkpoint while it looks incomplete: (path, file state),
        # since when, and why.
        self._incomplete: tuple[Any, float, str] | None = None
        self._settle_files = storage_of(str(target.model_dir)).kind == NETWORK
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
        if completion is None:
            self._completion_seen = None
        elif self._completion_seen is None or self._completion_seen[0] != completion:
            self._completion_seen = (completion, now)
        if path != self._last_seen_path:
            self._last_seen_path, self._last_new_at = path, now
        max_steps = self._policy.max_training_steps
        if (self._max_steps_reached_at is None and max_steps and latest is not None
                and latest.step is not None and latest.step >= max_steps):
            self._max_steps_reached_at = now
        # The latest checkpoint's path if it is neither skipped nor evaluated yet.
        fresh = (latest.path if latest is not None and latest.path not in self.skipped and (
            self.last_evaluated is None or latest.path != self.last_evaluated.path)
            else None)
        complete = fresh is None or self._is_complete(fresh, now)
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
            completion_seen_at=self._completion_seen[1] if self._completion_seen else None,
            incomplete_since=incomplete[1] if incomplete else None,
            incomplete_reason=incomplete[2] if incomplete else "",
            last_failure=self._failure)

    def _mark_start(self) -> None:
        """Writes the start marker and keeps its file time (see the class doc)."""
        import tensorflow as tf

        self._started_wall_time = time.time()
        self._started_marker_nsec = None
        if self._settle_files:  # a network file system: the chief's completion record
            # lands there; made before the first look for it (layout.listed)
            make_watched_dir(record_path(str(self._target.model_dir), RECORDS_DIR))
        if self._policy.stale_record_grace_secs <= 0:
            return  # every record is trusted at once: no need to tell their age
        marker = record_path(str(self._target.model_dir), START_MARKER)
        try:
            write_json(marker, {"started_at": self._started_wall_time, "pid": os.getpid()})
            self._started_marker_nsec = mtime_nsec(marker)
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
            written = mtime_nsec(completion_path(str(self._target.model_dir)))
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
        state = (path, checkpoints.file_state(path))
        if reason is None and self._settle_files and checkpoints.is_keras_file(path) and (
                self._incomplete is None or self._incomplete[0] != state):
            # Written in place on a network file system, where no lock tells another
            # host that its writer is done (and attributes may be cached): read whole,
            # and unchanged over one more look, it is complete.
            reason = "written in place: read again once unchanged for a poll interval"
        if reason is None:
            self._complete_path, self._incomplete = path, None
            return True
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
        waiter = self._waiter or waiter_for(str(self._target.model_dir), self._clock,
                                            self._policy.poll_secs)
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
            obs = self._observe_through_storage_errors(started_at, waiter)
            decision = decide(obs, self._policy)
            self._log(decision, obs)
            if decision.action is Action.FAIL:
                self.stop_reason = decision.reason
                error, self._failure_error = self._failure_error, None
                assert error is not None, "decide() fails only on an error kept by _failed"
                raise error
            if decision.action is Action.STOP:
                self.stop_reason = decision.reason
                if decision.run_over:
                    self._settler.run_over()
                return self.last_result
            if decision.action is Action.WAIT:
                waiter.wait(decision.wait_secs)
                continue
            latest = obs.latest
            assert latest is not None, "decide() skips or evaluates the latest checkpoint"
            if decision.action is Action.SKIP:
                self._skip(latest.path, decision.reason)
                continue
            if not self._evaluate(latest, decision.is_final):
                return self.last_result

    def _observe_through_storage_errors(self, started_at: float,
                                        waiter: Waiter) -> Observation:
        """`observe`, looked at again while the storage fails for a while (a transient
        storage fault: `trainexec.contract.storage_faults`), for up to the storage's
        stall bound (`trainexec.contract.storage_watch`); past it, or for any other
        error, the error is raised (the task then exits with its code)."""
        failing_since: float | None = None
        while True:
            try:
                return self.observe(started_at)
            except Exception as err:  # noqa: BLE001 - only a storage's own is waited out
                fault = storage_fault(err)
                if fault is None or not fault.retryable:
                    raise
                now = self._clock.now()
                failing_since = now if failing_since is None else failing_since
                bound = stall_bound(str(self._target.model_dir)) or _STORAGE_RETRY_SECS
                if now - failing_since >= bound:
                    logger.error("Evaluator: %s kept failing for %.0fs (bound %.0fs)",
                                 self._target.model_dir, now - failing_since, bound)
                    raise
                logger.warning("Evaluator: %s; looking again in %.0fs (for up to %.0fs)",
                               fault.describe(), self._policy.poll_secs, bound)
                waiter.wait(self._policy.poll_secs)

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
        self._settler.after_eval(result)  # recorded first: a listener may stop the process
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
