"""A parameter server: serves variables until it is stopped."""

from trainexec.tasks.context import TaskContext

__all__ = ["run"]


def run(ctx: TaskContext) -> None:
    ctx.start_server().join()
