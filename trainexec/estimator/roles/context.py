"""`TaskContext`: everything a role runner needs, gathered by the executor."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from trainexec.clock import Clock
from trainexec.cluster.config import ClusterConfig
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.estimator.availability import TrainableModel
from trainexec.estimator.target import EstimatorTarget
from trainexec.cluster.server import WorkerDelay, start_standard_server
from trainexec.specs import EvalSpec, TrainSpec

__all__ = ["TaskContext"]


@dataclasses.dataclass(frozen=True)
class TaskContext:
    estimator: TrainableModel
    train_spec: TrainSpec
    eval_spec: EvalSpec | None
    train_hooks: tuple
    listener: ContinuousEvalListener
    cluster: ClusterConfig
    clock: Clock
    worker_delay: WorkerDelay
    poll_secs: float
    idle_timeout_secs: float | None
    server_factory: Callable[..., Any] | None
    ps_serves_forever: bool = False

    @property
    def hooks(self) -> list:
        return list(self.train_spec.hooks) + list(self.train_hooks)

    def require_eval_spec(self) -> EvalSpec:
        if not isinstance(self.eval_spec, EvalSpec):
            raise TypeError(
                "`eval_spec` must have type `tf.estimator.EvalSpec` or "
                f"`trainexec.EvalSpec`. Got: {type(self.eval_spec)}")
        return self.eval_spec

    def start_server(self) -> Any:
        """Starts this task's TensorFlow server as the Estimator's RunConfig says."""
        config = self.estimator.config
        return start_standard_server(
            self.cluster, getattr(config, "session_config", None), self.server_factory,
            getattr(config, "protocol", None))

    def eval_target(self) -> EstimatorTarget:
        """The evaluation target; a corrupt-looking checkpoint is retried after
        `poll_secs` on this task's clock."""
        return EstimatorTarget(self.estimator, self.require_eval_spec(), clock=self.clock,
                               retry_secs=self.poll_secs)
