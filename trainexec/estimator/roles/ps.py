"""A parameter server: serves variables until training is over.

TensorFlow's ps serves forever (`server.join()`), so something else must kill
it. trainexec's ps exits 0 instead, checking every `poll_secs`, once

* the chief (or master) and every worker have recorded that their training
  returned since this ps started (see `trainexec.finished_tasks`); or
* the chief's completion record (`<model_dir>/trainexec/training_complete.json`)
  shows training is over, and the tasks that have not recorded finishing had
  `DRAIN_SECS` more (a worker may be finishing its last step; one that crashed
  and was not restarted no longer keeps the ps serving). The record counts
  when it was written since this ps started (this run's: a new run's chief
  clears an earlier one before training), or, whatever its age, when it and
  the latest checkpoint have reached the run's `max_steps`: every training
  task of this run would then skip training, so a ps restarted after the end
  stops at once (a finished record of any age counts there).

What keeps it serving, as TensorFlow's would: training still going on, and a
ps restarted after the end of a run without `max_steps` (an older record could
be an earlier run's, not yet cleared by this run's chief). It logs which tasks
it waits for when it starts and every `STILL_WAITING_LOG_SECS`. With
`ps_serves_forever=True` it joins the server as TensorFlow's does.

The TensorFlow server serves until the process exits: TensorFlow's gRPC server
cannot be stopped, and dropping the reference frees neither it nor its port
(see `trainexec.server.start_standard_server`). `run` returns, and the process
then exits.
"""

from __future__ import annotations

import dataclasses
import logging
import os

from trainexec.checkpoints import checkpoint_step
from trainexec.completion import read_training_complete
from trainexec.finished_tasks import FinishedTasks
from trainexec.estimator.roles.context import TaskContext

__all__ = ["PsObservation", "decide", "run"]

logger = logging.getLogger(__name__)

STILL_WAITING_LOG_SECS = 60
DRAIN_SECS = 30.0


@dataclasses.dataclass(frozen=True)
class PsObservation:
    """What the ps saw on one look.

    `missing`: training tasks without a finished record since this ps started;
    `unfinished`: those without any finished record; `over`: why the completion
    record shows training is over (None: it does not); `over_this_run`: the
    record was written since this ps started; `over_since`: when this ps first
    saw training over.
    """

    now: float
    missing: frozenset
    unfinished: frozenset = frozenset()
    over: str | None = None
    over_this_run: bool = False
    over_since: float | None = None


def decide(obs: PsObservation, drain_secs: float = DRAIN_SECS) -> str | None:
    """Why the ps stops now, or None to keep serving (pure)."""
    if not obs.missing:
        return "every training task has recorded that its training finished"
    if obs.over is None:
        return None
    waiting = obs.missing if obs.over_this_run else obs.unfinished
    if not waiting:
        return f"{obs.over}, and every training task has finished"
    since = obs.now if obs.over_since is None else obs.over_since
    if obs.now - since >= drain_secs:
        return (f"{obs.over}; {', '.join(sorted(waiting))} did not record finishing "
                f"within {drain_secs:.0f}s after that")
    return None


def run(ctx: TaskContext) -> None:
    if ctx.ps_serves_forever:
        ctx.start_server().join()
        return
    model_dir = ctx.estimator.model_dir
    # Marked before the server starts, so a trainer that needs it finishes later.
    watch = FinishedTasks.starting_now(model_dir, ctx.cluster.task_name)
    ctx.start_server()  # serves until this process exits (see the module doc)
    expected = frozenset(ctx.cluster.training_tasks)
    logger.info("Serving until %s record that training finished (in %s), or the chief "
                "records that training is complete (%s)", ", ".join(sorted(expected)),
                watch.directory, watch.completion_path)
    over_since = None
    next_log = ctx.clock.now()  # the first look logs what it waits for
    while True:
        now = ctx.clock.now()
        missing = frozenset(expected - watch.finished())
        over, this_run = _training_over(ctx, watch) if missing else (None, False)
        if over is None:
            over_since = None  # (a record cleared by a new run's chief)
        elif over_since is None:
            over_since = now
            logger.info("Training is over: %s", over)
        reason = decide(PsObservation(
            now=now, missing=missing,
            unfinished=frozenset(expected - watch.ever_finished()) if over else frozenset(),
            over=over, over_this_run=this_run, over_since=over_since), DRAIN_SECS)
        if reason is not None:
            break
        if now >= next_log:
            next_log = now + STILL_WAITING_LOG_SECS
            logger.info("Serving: waiting for %s to record that training finished "
                        "(in %s)%s", ", ".join(sorted(missing)), watch.directory,
                        f"; training is over, stopping within {DRAIN_SECS:.0f}s of "
                        "seeing that" if over else "")
        ctx.clock.sleep(ctx.poll_secs)
    logger.info("%s stops serving: %s", ctx.cluster.task_name, reason)


def _training_over(ctx: TaskContext, watch: FinishedTasks) -> tuple[str | None, bool]:
    """(why the completion record shows training is over, or None; whether the
    record is from this run)."""
    if watch.completed_since():
        return "the chief recorded that training is complete", True
    max_steps = ctx.train_spec.max_steps
    if max_steps is None:
        return None, False
    record = read_training_complete(ctx.estimator.model_dir)
    if record is None or not record.matches(max_steps):
        return None, False
    latest = ctx.estimator.latest_checkpoint()
    step = checkpoint_step(latest) if latest else None
    if step is None or step < max_steps:
        return None, False
    return (f"the completion record and the latest checkpoint, {os.path.basename(latest)}, "
            f"have reached max_steps {max_steps}", False)
