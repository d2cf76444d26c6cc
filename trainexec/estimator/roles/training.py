"""The Estimator's training roles (TRAIN, TRAIN_AND_EVALUATE), as their `RolePlan` says.

`run(ctx, plan)` is the chief, a worker, the master and a local run alike;
the plan's flags say which steps the task takes, in this order:

1. `writes_checkpoints`: clear an earlier run's completion record;
2. `starts_server`: start the task's TensorFlow server (before any delay, so
   that its peers can connect);
3. `start_delay`: wait out the worker's staggered start delay;
4. `waits_for_chief`: re-check every `poll_secs` (not TensorFlow's 30 s) that
   the chief has initialized the model (`readiness`);
5. train (with the train spec's saving listeners where it writes the
   checkpoints), and for TRAIN_AND_EVALUATE evaluate after each checkpoint
   save (`evaluate_on_save`);
6. unless `is_local`: record that this task's training finished (the ps waits
   for that);
7. `writes_checkpoints`: record that training is complete.

A local run (`is_local`) returns `(metrics, export_results)`; the other roles
return None, as tf.estimator's do.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Sequence

from trainexec.records.completion import (clear_training_complete, record_training_complete)
from trainexec.records.checkpoints import latest_checkpoint
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.records.finished_tasks import record_task_finished
from trainexec.estimator.roles.context import TaskContext
from trainexec.estimator.roles.evaluate_on_save import evaluate_on_save
from trainexec.estimator.roles.readiness import model_readiness_checks_every
from trainexec.trainer import TRAIN, TRAIN_AND_EVALUATE, RolePlan

__all__ = ["record_completion", "run", "start_fresh_run", "train"]

logger = logging.getLogger(__name__)


def run(ctx: TaskContext, plan: RolePlan) -> tuple[dict | None, list | None] | None:
    """Carries out a TRAIN or TRAIN_AND_EVALUATE `plan` (see the module doc)."""
    if plan.action not in (TRAIN, TRAIN_AND_EVALUATE):
        raise ValueError(f"{plan.describe()}: not a training role")
    # The train spec's saving listeners run where the checkpoints are saved.
    saving_listeners = ctx.train_spec.saving_listeners if plan.writes_checkpoints else ()
    on_save = None
    if plan.action == TRAIN_AND_EVALUATE:
        # The job's listener follows a local run; a master's evaluations are its own.
        on_save = evaluate_on_save(ctx, ctx.listener if plan.is_local
                                   else ContinuousEvalListener())
        saving_listeners += (on_save,)
        if plan.is_local:
            config = ctx.estimator.config
            logger.info(
                "Start train and evaluate loop: evaluation follows checkpoint saves "
                "(save_checkpoints_steps=%s, save_checkpoints_secs=%s), at most every %ss.",
                getattr(config, "save_checkpoints_steps", None),
                getattr(config, "save_checkpoints_secs", None), ctx.eval_spec.throttle_secs)
    if plan.writes_checkpoints:
        start_fresh_run(ctx)
    server = ctx.start_server() if plan.starts_server else None
    if plan.start_delay:
        _wait_start_delay(ctx)
    waits_for_chief = (model_readiness_checks_every(ctx.poll_secs) if plan.waits_for_chief
                       else contextlib.nullcontext())
    with waits_for_chief:
        train(ctx, saving_listeners)
    if not plan.is_local:
        record_task_finished(ctx.estimator.model_dir, ctx.cluster.task_name)  # the ps waits on it
    # A tf.distribute.Server cannot be stopped: its port stays bound until the
    # process exits, whatever happens to this reference.
    _ = server
    if plan.writes_checkpoints:
        record_completion(ctx)
    if not plan.is_local:
        return None
    if on_save is None:
        return None, None
    metrics = on_save.eval_result.metrics if on_save.eval_result else None
    return metrics, on_save.export_results


def _wait_start_delay(ctx: TaskContext) -> None:
    delay = ctx.worker_delay.secs_for(
        ctx.cluster.task_type, ctx.cluster.task_index,
        getattr(ctx.estimator.config, "experimental_max_worker_delay_secs", None))
    if delay > 0:
        logger.info("Waiting %.0f secs before starting training.", delay)
        ctx.clock.sleep(delay)


def train(ctx: TaskContext, saving_listeners: Sequence = ()) -> None:
    """`estimator.train` as the train spec says, with the extra listeners."""
    ctx.estimator.train(
        input_fn=ctx.train_spec.input_fn, max_steps=ctx.train_spec.max_steps,
        hooks=ctx.hooks, saving_listeners=list(saving_listeners) or None)


def start_fresh_run(ctx: TaskContext) -> None:
    """Clears an earlier run's completion record before this run trains."""
    clear_training_complete(ctx.estimator.model_dir)


def record_completion(ctx: TaskContext) -> None:
    """Records that training returned, at the latest checkpoint."""
    latest = latest_checkpoint(ctx.estimator.model_dir)
    record_training_complete(
        ctx.estimator.model_dir, latest.path if latest else None,
        latest.step if latest else None, ctx.train_spec.max_steps)
