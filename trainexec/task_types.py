"""The names of a TF_CONFIG cluster's task types, and of the trainers that run them.

Example:
    ```python
    if cluster.task_type in TRAINER_TYPES: ...   # chief, master or worker
    ```
"""

__all__ = ["CHIEF", "ESTIMATOR", "EVALUATOR", "KERAS", "LOCAL", "MASTER", "PS",
           "SUPPORTED_TASK_TYPES", "TRAINER_TYPES", "WORKER"]

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
