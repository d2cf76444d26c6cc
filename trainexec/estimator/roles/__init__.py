"""One module per cluster role; each exposes `run(context)`."""

from trainexec.estimator.roles.context import TaskContext

__all__ = ["TaskContext"]
