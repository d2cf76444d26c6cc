"""Local (non-distributed) train and evaluate in one process."""

from __future__ import annotations

import logging

from trainexec.evaluation import Evaluator
from trainexec.tasks.context import TaskContext
from trainexec.tasks.evaluate_on_save import EvaluateOnSaveListener
from trainexec.tasks.training import record_completion, start_fresh_run

__all__ = ["run"]

logger = logging.getLogger(__name__)


def run(ctx: TaskContext) -> tuple[dict | None, list | None]:
    eval_spec = ctx.require_eval_spec()
    config = ctx.estimator.config
    logger.info(
        "Start train and evaluate loop: evaluation follows checkpoint saves "
        "(save_checkpoints_steps=%s, save_checkpoints_secs=%s), at most every %ss.",
        getattr(config, "save_checkpoints_steps", None),
        getattr(config, "save_checkpoints_secs", None), eval_spec.throttle_secs)
    # Finality is decided by the end of training, not by max_steps: with
    # asynchronous workers the last save can land past max_steps.
    evaluator = Evaluator(ctx.eval_target(), eval_spec.exporters, None, ctx.clock)
    on_save = EvaluateOnSaveListener(evaluator, eval_spec.throttle_secs, ctx.listener,
                                     ctx.clock, ctx.train_spec.max_steps)
    start_fresh_run(ctx)
    ctx.estimator.train(
        input_fn=ctx.train_spec.input_fn, max_steps=ctx.train_spec.max_steps,
        hooks=ctx.hooks, saving_listeners=list(ctx.train_spec.saving_listeners) + [on_save])
    record_completion(ctx)
    metrics = on_save.eval_result.metrics if on_save.eval_result else None
    return metrics, on_save.export_results
