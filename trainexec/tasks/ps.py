"""A parameter server: serves variables until it is stopped."""

from trainexec.server import start_standard_server
from trainexec.tasks.context import TaskContext

__all__ = ["run"]


def run(ctx: TaskContext) -> None:
    server = start_standard_server(
        ctx.cluster, getattr(ctx.estimator.config, "session_config", None),
        ctx.server_factory)
    server.join()
