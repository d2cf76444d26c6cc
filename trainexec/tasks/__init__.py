"""One module per cluster role; each exposes `run(context)`."""

from trainexec.tasks.context import TaskContext

__all__ = ["TaskContext"]
