"""The restart group a KerasTrainer task announces to its launcher.

`rule_for_plan(plan)` turns a task's `StrategyPlan` into the
`trainexec.contract.restart_announcements.RestartRule` it announces (see that module for
the protocol).

Example:
    ```python
    announce(rule_for_plan(plan))   # a no-op unless `trainexec launch` started the task
    ```
"""

from __future__ import annotations

from trainexec.cluster.config import CHIEF, PS, WORKER
from trainexec.keras.strategy import MULTI_WORKER_MIRRORED, PARAMETER_SERVER, StrategyPlan
from trainexec.contract.restart_announcements import RestartRule

__all__ = ["rule_for_plan"]


def rule_for_plan(plan: StrategyPlan) -> RestartRule:
    """The restart rule of a KerasTrainer task (`StrategyPlan`; pure).

    MWMS: every training task together. PSS: a worker alone (and the job may go
    on without it); a ps with the chief, which restores the variables; the chief
    alone. Anything else (a lone chief, the evaluator): itself.
    """
    cluster = plan.cluster
    task = cluster.task_name
    training = cluster.training_cluster
    if plan.kind == MULTI_WORKER_MIRRORED and cluster.task_type in training:
        group = cluster.training_tasks  # the chief (or master) and every worker
        return RestartRule(task, group, strategy=plan.kind, ends_by_itself=True)
    if plan.kind == PARAMETER_SERVER and cluster.task_type == WORKER:
        return RestartRule(task, (task,), carry_on=True, strategy=plan.kind,
                           ends_by_itself=True)
    if plan.kind == PARAMETER_SERVER and cluster.task_type == PS:
        return RestartRule(task, (task, cluster.chief_task or f"{CHIEF}:0"),
                           strategy=plan.kind, ends_by_itself=True)
    return RestartRule(task, (task,), strategy=plan.kind, ends_by_itself=True)
