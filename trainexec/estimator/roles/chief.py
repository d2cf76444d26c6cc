"""The chief: trains, saves checkpoints, and records when training is done."""

from trainexec.estimator.roles.context import TaskContext
from trainexec.estimator.roles.training import (record_completion, run_distributed_training,
                                                      start_fresh_run)

__all__ = ["run"]


def run(ctx: TaskContext) -> None:
    start_fresh_run(ctx)
    run_distributed_training(ctx, ctx.train_spec.saving_listeners)
    record_completion(ctx)
