"""The names of a TF_CONFIG cluster's task types, and of the trainers that run them.

Example:
    ```python
    if cluster.task_type in TRAINER_TYPES: ...   # chief, master or worker
    ```
"""

__all__ = ["CHIEF", "ESTIMATOR", "EVALUATOR", "KERAS", "LOCAL", "MASTER", "PS",
           "SUPPORTED_TASK_TYPES", "TRAINER_TYPES", "TaskType", "WORKER"]

CHIEF = "chief"
MASTER = "master"
WORKER = "worker"
PS = "ps"
EVALUATOR = "evaluator"
LOCAL = "local"  # the role of a process without a cluster

SUPPORTED_TASK_TYPES = (CHIEF, WORKER, MASTER, PS, EVALUATOR)
TRAINER_TYPES = (CHIEF, MASTER, WORKER)  # the task types that train

# Trainer names in `trainexec.cluster.verdicts.trainer_support`.
ESTIMATOR = "Estimator"
KERAS = "Keras"


class TaskType:
    """tf.estimator's names for the task types (`trainexec.estimator.TaskType`), the
    constants above: `TaskType.CHIEF == "chief"`."""

    MASTER = MASTER
    PS = PS
    WORKER = WORKER
    CHIEF = CHIEF
    EVALUATOR = EVALUATOR
