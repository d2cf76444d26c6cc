"""What a task does and with which job settings: a trainer's `RolePlan`, and `JobSettings`.

A trainer (`trainexec.trainer.Trainer`) returns a `RolePlan` for this process's task:
whether it starts a standard TensorFlow server, waits out a start delay, waits for the
chief, writes the run's checkpoints, runs alone or as a task of a cluster, and whether
it trains, serves until training is over, evaluates, or trains and evaluates after its
checkpoint saves. `trainexec.tasks.roles.run_role` carries the plan out, with the
trainer's hooks and the executor's `JobSettings`. `trainexec.trainer` re-exports every
name here (`from trainexec.trainer import RolePlan` keeps working).

Example:
    ```python
    plan = RolePlan("worker:1", TRAIN, starts_server=True, start_delay=True,
                    waits_for_chief=True, strategy="between-graph replication")
    plan.describe()   # 'worker:1 trains (between-graph replication); starts a ...'
    ```
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable

from trainexec.clock import Clock
from trainexec.cluster.config import LOCAL, ClusterConfig
from trainexec.cluster.server import WorkerDelay
from trainexec.errors import ConfigError
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.specs import EvalSpec, TrainSpec, as_eval_spec, as_train_spec, check_poll_secs

__all__ = ["COORDINATE", "EVALUATE", "SERVE", "TRAIN", "TRAIN_AND_EVALUATE", "JobSettings",
           "RolePlan", "TaskAction"]


class TaskAction(str, enum.Enum):
    """What a task does: trainexec's one vocabulary for it, in a `RolePlan` (the
    executor's view) and in a Keras `StrategyPlan` (which strategy does it). A `str`, so
    that a value reads and compares as its word ("train")."""

    TRAIN = "train"                             # trains (chief, worker, a lone chief)
    COORDINATE = "coordinate"                   # trains by dispatching steps (PSS chief)
    SERVE = "serve"                             # serves variables/steps until training is over
    EVALUATE = "evaluate"                       # evaluates new checkpoints (the evaluator)
    TRAIN_AND_EVALUATE = "train and evaluate"   # trains, evaluating its own saves (local, master)

    def __str__(self) -> str:
        return self.value


TRAIN = TaskAction.TRAIN
COORDINATE = TaskAction.COORDINATE
SERVE = TaskAction.SERVE
EVALUATE = TaskAction.EVALUATE
TRAIN_AND_EVALUATE = TaskAction.TRAIN_AND_EVALUATE

# What a RolePlan's task does, for the log (a coordinating chief's plan says TRAIN).
_DOES = {TRAIN: "trains", SERVE: "serves until training is over",
         EVALUATE: "evaluates new checkpoints",
         TRAIN_AND_EVALUATE: "trains and evaluates after checkpoint saves"}


@dataclasses.dataclass(frozen=True)
class RolePlan:
    """What this process's task does for its trainer.

    Attributes:
      task: the task's name (`chief:0`, `worker:1`), or `local`.
      action: TRAIN, SERVE, EVALUATE or TRAIN_AND_EVALUATE.
      starts_server: the task starts a standard TensorFlow server (a
        `tf.distribute` strategy that owns its servers, or the evaluator, does not).
      start_delay: the task waits out a staggered start delay before training.
      waits_for_chief: the task waits for the chief to initialize the model.
      writes_checkpoints: the task writes the run's checkpoints and its
        completion record (it clears an earlier run's record before training).
      strategy: how training is distributed, for the log (e.g.
        "MultiWorkerMirroredStrategy", "between-graph replication").
      is_local: the task runs alone, without a cluster (no TF_CONFIG): the
        job's `ContinuousEvalListener` sees its evaluations and it returns
        `(metrics, export_results)`. A training task of a cluster instead
        records that its training finished (`trainexec.records.finished_tasks`; the ps
        waits for that), and a master's evaluations after its saves go to its
        log and exporters only, as in `tf.estimator`.
    """

    task: str
    action: TaskAction
    starts_server: bool = False
    start_delay: bool = False
    waits_for_chief: bool = False
    writes_checkpoints: bool = False
    strategy: str = ""
    is_local: bool = False

    def __post_init__(self) -> None:
        if self.action not in _DOES:
            coordinating = (" (a ParameterServerStrategy chief coordinates, and its plan "
                            "says 'train')" if self.action == COORDINATE else "")
            raise ValueError(f"RolePlan action {str(self.action)!r}{coordinating} must be "
                             f"one of {sorted(str(action) for action in _DOES)}")
        object.__setattr__(self, "action", TaskAction(self.action))
        if self.is_local and self.task != LOCAL:
            raise ValueError(f"RolePlan for {self.task!r} has is_local=True: a local "
                             f"run's task is {LOCAL!r}")

    def describe(self) -> str:
        """One log line: e.g. `worker:1 trains (MultiWorkerMirroredStrategy)`."""
        facts = []
        if self.starts_server:
            facts.append("starts a TensorFlow server")
        if self.start_delay:
            facts.append("staggered start")
        if self.waits_for_chief:
            facts.append("waits for the chief to initialize the model")
        if self.writes_checkpoints:
            facts.append("writes checkpoints")
        detail = f" ({self.strategy})" if self.strategy else ""
        more = f"; {', '.join(facts)}" if facts else ""
        return f"{self.task} {_DOES[self.action]}{detail}{more}"


@dataclasses.dataclass(frozen=True)
class JobSettings:
    """The job-wide settings the executor passes to a trainer's role.

    `train_hooks`, `worker_delay`, `server_factory` and `ps_serves_forever`
    concern Estimator training; a trainer that cannot honour one of them
    given a non-default value says so (ConfigError).
    """

    train_spec: TrainSpec
    eval_spec: EvalSpec | None
    cluster: ClusterConfig
    clock: Clock
    poll_secs: float
    idle_timeout_secs: float | None
    listener: ContinuousEvalListener
    train_hooks: tuple = ()
    worker_delay: WorkerDelay = dataclasses.field(default_factory=WorkerDelay)
    server_factory: Callable[..., Any] | None = None
    ps_serves_forever: bool = False

    def __post_init__(self) -> None:
        check_poll_secs(self.poll_secs)
        # The specs are parsed here, once: a tf.estimator TrainSpec or EvalSpec
        # becomes trainexec's own, so no role checks their type again.
        object.__setattr__(self, "train_spec", as_train_spec(self.train_spec))
        if self.eval_spec is not None:
            object.__setattr__(self, "eval_spec", as_eval_spec(self.eval_spec))

    def eval_spec_for(self, task: str) -> EvalSpec:
        """The EvalSpec of `task`, which evaluates; ConfigError if there is none."""
        if self.eval_spec is None:
            raise ConfigError(
                f"eval_spec is None, but {task} evaluates: pass an EvalSpec (trainexec's "
                "or tf.estimator's) to train_and_evaluate or TrainingExecutor")
        return self.eval_spec
