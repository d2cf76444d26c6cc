"""Local (non-distributed) train and evaluate in one process."""

from __future__ import annotations

import logging

from trainexec.estimator.roles.context import TaskContext
from trainexec.estimator.roles.evaluate_on_save import evaluate_on_save
from trainexec.estimator.roles.training import record_completion, start_fresh_run, train

__all__ = ["run"]

logger = logging.getLogger(__name__)


def run(ctx: TaskContext) -> tuple[dict | None, list | None]:
    on_save = evaluate_on_save(ctx, ctx.listener)
    config = ctx.estimator.config
    logger.info(
        "Start train and evaluate loop: evaluation follows checkpoint saves "
        "(save_checkpoints_steps=%s, save_checkpoints_secs=%s), at most every %ss.",
        getattr(config, "save_checkpoints_steps", None),
        getattr(config, "save_checkpoints_secs", None), ctx.eval_spec.throttle_secs)
    start_fresh_run(ctx)
    train(ctx, ctx.train_spec.saving_listeners + (on_save,))
    record_completion(ctx)
    metrics = on_save.eval_result.metrics if on_save.eval_result else None
    return metrics, on_save.export_results
