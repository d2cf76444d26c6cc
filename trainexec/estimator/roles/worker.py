"""A (non-chief) training worker: server, staggered start, train."""

from trainexec.estimator.roles.context import TaskContext
from trainexec.estimator.roles.training import run_distributed_training

__all__ = ["run"]


def run(ctx: TaskContext) -> None:
    run_distributed_training(ctx)
