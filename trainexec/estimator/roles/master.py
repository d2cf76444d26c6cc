"""The master (TF 1.x chief): trains and evaluates after each checkpoint save."""

from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.estimator.roles.context import TaskContext
from trainexec.estimator.roles.evaluate_on_save import evaluate_on_save
from trainexec.estimator.roles.training import (record_completion, run_distributed_training,
                                                      start_fresh_run)

__all__ = ["run"]


def run(ctx: TaskContext) -> None:
    on_save = evaluate_on_save(ctx, ContinuousEvalListener())
    start_fresh_run(ctx)
    run_distributed_training(ctx, ctx.train_spec.saving_listeners + (on_save,))
    record_completion(ctx)
