"""How an Estimator carries out each kind of `RolePlan`, one module per action.

* `training`: TRAIN and TRAIN_AND_EVALUATE (chief, worker, master, a local run),
  step by step as the plan's flags say;
* `evaluate_on_save`: the saving listener that evaluates a local run's or the
  master's own checkpoint saves;
* `ps`: SERVE, a parameter server until training is over;
* `evaluator`: EVALUATE, the evaluator task;
* `context`: `TaskContext`, what each of them is given;
* `readiness`: how often a worker re-checks the chief's model.
"""

from trainexec.estimator.roles.context import TaskContext

__all__ = ["TaskContext"]
