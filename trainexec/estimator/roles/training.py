"""Distributed training shared by chief, worker and master: server, delay, train."""

from __future__ import annotations

import contextlib
import logging
from typing import Sequence

from trainexec.completion import (clear_training_complete, record_training_complete)
from trainexec.checkpoints import checkpoint_step
from trainexec.finished_tasks import record_task_finished
from trainexec.estimator.roles.context import TaskContext
from trainexec.estimator.roles.readiness import model_readiness_checks_every

__all__ = ["record_completion", "run_distributed_training", "start_fresh_run", "train"]

logger = logging.getLogger(__name__)


def run_distributed_training(ctx: TaskContext, saving_listeners: Sequence = ()) -> None:
    """Starts the server (before any delay, so peers can connect), waits, trains."""
    server = None  # referenced until training returns (the gRPC server lives until exit)
    if not ctx.cluster.is_google_environment:
        server = ctx.start_server()
    delay = ctx.worker_delay.secs_for(
        ctx.cluster.task_type, ctx.cluster.task_index,
        getattr(ctx.estimator.config, "experimental_max_worker_delay_secs", None))
    if delay > 0:
        logger.info("Waiting %.0f secs before starting training.", delay)
        ctx.clock.sleep(delay)
    # A non-chief waits for the chief to initialize the model: check every
    # poll_secs rather than TensorFlow's fixed 30 s (see estimator/roles/readiness.py).
    waits_for_chief = (contextlib.nullcontext() if ctx.cluster.is_chief
                       else model_readiness_checks_every(ctx.poll_secs))
    with waits_for_chief:
        train(ctx, saving_listeners)
    record_task_finished(ctx.estimator.model_dir, ctx.cluster.task_name)  # the ps waits on it
    # A tf.distribute.Server cannot be stopped: its port stays bound until the
    # process exits, whatever happens to this reference.
    _ = server


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
    checkpoint = ctx.estimator.latest_checkpoint()
    record_training_complete(
        ctx.estimator.model_dir, checkpoint,
        checkpoint_step(checkpoint) if checkpoint else None, ctx.train_spec.max_steps)
