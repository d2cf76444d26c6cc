"""Is the run over? The one answer for every task that waits for training to end (pure).

Training ends in the model directory: the chief's completion record
(`trainexec.records.completion`), the training tasks' finished records
(`trainexec.records.finished_tasks`) and the checkpoints. Three kinds of task ask:

* the evaluators (the continuous loop and `SidecarEvaluator`): is this
  checkpoint the run's last? `checkpoint_finality`, after `trusted_completion`
  (a record older than the evaluator may be an earlier run's) and
  `completion_for_newest` (a record naming an older checkpoint than the newest
  is an earlier run's);
* the servers (an Estimator ps, a ParameterServerStrategy worker or ps): may I
  stop serving? `serving_stop_reason`, with `over_at_max_steps` for a run
  restarted after its end.

Nothing here reads a file or a clock: the callers observe, these decide.

Example:
    ```python
    finality = checkpoint_finality(latest, record, max_steps=1000,
                                   max_steps_reached_at=None, now=now,
                                   completion_wait_secs=30)
    if finality is Finality.FINAL: ...
    ```
"""

from __future__ import annotations

import dataclasses
import enum
import os

from trainexec.records import checkpoints
from trainexec.records.checkpoints import CheckpointInfo
from trainexec.records.completion import TrainingComplete

__all__ = [
    "RECORDED_DRAIN_SECS",
    "Finality",
    "ServingObservation",
    "checkpoint_finality",
    "completion_for_newest",
    "is_last_checkpoint",
    "over_at_max_steps",
    "serving_stop_reason",
    "trusted_completion",
]

# How long a serving task that saw training over waits for tasks that already have a
# finished record from before it started (see `serving_stop_reason`).
RECORDED_DRAIN_SECS = 5.0


class Finality(enum.Enum):
    """Whether a checkpoint is the run's last."""

    FINAL = "final"
    ENDING = "ending"  # at max_steps: the chief's record, naming the last one, is awaited
    NOT_FINAL = "not final"


def trusted_completion(record: TrainingComplete | None, predates_start: bool,
                       secs_since_start: float, stale_record_grace_secs: float,
                       max_steps: int | None = None) -> TrainingComplete | None:
    """`record`, unless it was written before the asker started and the grace
    for a new run's chief to clear an earlier run's record has not passed.

    A record written before the asker started that ends a run with the asker's
    own `max_steps` (at them or past them) is trusted at once: it is this run's,
    seen by a task restarted after training ended, or an earlier run's with the
    same `max_steps`, after which a new run has nothing left to train."""
    if record is None:
        return None
    if predates_start and secs_since_start < stale_record_grace_secs:
        if (max_steps and record.max_steps == max_steps
                and record.global_step is not None and record.global_step >= max_steps):
            return record
        return None  # maybe an earlier run's record, about to be cleared
    return record


def completion_for_newest(record: TrainingComplete | None,
                          latest: str | None) -> TrainingComplete | None:
    """`record`, unless the newest checkpoint `latest` is newer than the one it
    names (by the numbers in their names): then it is an earlier run's."""
    if record is None or not latest or not record.checkpoint:
        return record
    latest_order = checkpoints.checkpoint_order(latest)
    recorded = checkpoints.checkpoint_order(record.checkpoint)
    if latest_order is not None and recorded is not None and latest_order > recorded:
        return None
    return record


def is_last_checkpoint(checkpoint_path: str, record: TrainingComplete) -> bool:
    """Whether `checkpoint_path` is (or is past) the one the completion record names.

    Names are compared with names, so the numbering need not be training steps
    (Keras numbers by epoch or save). The record is written after training
    returns: one that names no checkpoint means the newest is the last, and so
    does a name without a number.
    """
    if not record.checkpoint:
        return True
    if os.path.basename(record.checkpoint) == os.path.basename(checkpoint_path):
        return True
    # Numbers from names on both sides: a step held elsewhere (an evaluated
    # checkpoint's training step) is not what Keras names carry.
    number = checkpoints.checkpoint_order(checkpoint_path)
    recorded = checkpoints.checkpoint_order(record.checkpoint)
    return number is None or recorded is None or number >= recorded


def checkpoint_finality(checkpoint: CheckpointInfo, record: TrainingComplete | None,
                        max_steps: int | None, max_steps_reached_at: float | None,
                        now: float, completion_wait_secs: float) -> Finality:
    """Whether `checkpoint` is the run's last.

    With a (trusted) completion record, the record decides. Without one, a
    checkpoint at or past `max_steps` is ENDING until `completion_wait_secs`
    after it was first seen there (asynchronous workers can push the chief's
    last save past `max_steps`, and the record names the real last one), then
    FINAL (a chief that keeps no record).
    """
    if record is not None:
        return Finality.FINAL if is_last_checkpoint(checkpoint.path, record) \
            else Finality.NOT_FINAL
    if not (max_steps and checkpoint.step is not None and checkpoint.step >= max_steps):
        return Finality.NOT_FINAL
    if (max_steps_reached_at is not None
            and now - max_steps_reached_at >= completion_wait_secs):
        return Finality.FINAL
    return Finality.ENDING


def over_at_max_steps(record: TrainingComplete | None, latest_step: int | None,
                      max_steps: int | None) -> bool:
    """Whether the completion record and the latest checkpoint, whatever their
    age, have both reached the run's `max_steps`: every training task of the
    run would skip training, so the run is over (a task restarted after the
    end must not wait for training that will never come). A record without a
    step leaves it to the checkpoint."""
    if max_steps is None or record is None or latest_step is None:
        return False
    if not record.matches(max_steps):
        return False
    recorded = latest_step if record.global_step is None else record.global_step
    return min(recorded, latest_step) >= max_steps


@dataclasses.dataclass(frozen=True)
class ServingObservation:
    """What a serving task saw on one look.

    `waited_for`: the training tasks it waits for; `missing`: those without a
    finished record since it started; `unfinished`: those without any finished
    record; `over`: why the completion record shows training is over (None: it
    does not); `over_this_run`: the record was written since it started;
    `over_since`: when it first saw training over.
    """

    now: float
    waited_for: frozenset
    missing: frozenset
    unfinished: frozenset = frozenset()
    over: str | None = None
    over_this_run: bool = False
    over_since: float | None = None


def serving_stop_reason(obs: ServingObservation, drain_secs: float) -> str | None:
    """Why a serving task stops now, or None to keep serving.

    It stops once every task it waits for has recorded finishing; or once
    training is over and those still missing had `drain_secs` more (a worker
    may be finishing its last step; one that crashed and was not restarted no
    longer keeps it serving), `RECORDED_DRAIN_SECS` at most when each of them
    has a finished record from before it started (a ps restarted after the
    workers finished must not wait the whole drain for them). A completion
    record from before it started counts only with the tasks' finished
    records of any age.
    """
    if not obs.missing:
        if len(obs.waited_for) == 1:
            return f"{next(iter(obs.waited_for))} recorded that its training finished"
        return "every training task has recorded that its training finished"
    if obs.over is None:
        return None
    waiting = obs.missing if obs.over_this_run else obs.unfinished
    if not waiting:
        return f"{obs.over}, and every training task has finished"
    if drain_secs <= 0:
        return obs.over
    since = obs.now if obs.over_since is None else obs.over_since
    if not waiting & obs.unfinished:
        # Each has a finished record from before this task started: this run's (it
        # finished before this task restarted) or an earlier run's. One still training
        # in this run writes a new record within a step of the end: no long drain.
        drain_secs = min(drain_secs, RECORDED_DRAIN_SECS)
    if obs.now - since >= drain_secs:
        return (f"{obs.over}; {', '.join(sorted(waiting))} did not record finishing "
                f"within {drain_secs:.0f}s after that")
    return None
