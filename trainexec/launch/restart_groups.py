"""Restart groups: which tasks the launcher restarts together when one fails.

A task's group is the union of what it announced
(`trainexec.contract.restart_announcements`) and every flag group naming it:
`--restart-group chief,worker` (`LocalCluster(restart_groups=...)`; job or
task names, repeatable) makes the named tasks one group, each way round, for
hand-written jobs that announce nothing. A task with neither restarts alone,
as it always has (Estimator jobs). The policy (`trainexec.launch.policy`)
restarts the merged group of a failed task.

Example:
    ```python
    parse_group_flag("chief,worker", ["chief:0", "worker:0", "worker:1", "ps:0"])
    # ("chief:0", "worker:0", "worker:1")
    ```
"""

from __future__ import annotations

from typing import Mapping, Sequence

from trainexec.contract.restart_announcements import RestartRule

__all__ = ["merge_rules", "parse_group_flag"]


def parse_group_flag(value: str, tasks: Sequence[str]) -> tuple[str, ...]:
    """The task names of one `--restart-group` value ("chief,worker"), in task order.

    Raises ValueError naming the unknown name and the valid ones.
    """
    names = [name.strip() for name in str(value).split(",") if name.strip()]
    if not names:
        raise ValueError(f"--restart-group {value!r} names no task: give job or task "
                         "names separated by commas, e.g. --restart-group chief,worker")
    wanted: set[str] = set()
    for name in names:
        matches = [t for t in tasks if name in (t, t.split(":")[0])]
        if not matches:
            raise ValueError(f"--restart-group names {name!r}, which is not in this "
                             f"cluster: use a job or a task of {', '.join(tasks)}")
        wanted.update(matches)
    return tuple(t for t in tasks if t in wanted)


def merge_rules(announced: Mapping[str, RestartRule],
                flag_groups: Sequence[Sequence[str]],
                tasks: Sequence[str]) -> dict[str, RestartRule]:
    """Each task's rule: its announced group united with every flag group naming it
    (pure). Tasks with neither get no rule (they restart alone)."""
    merged: dict[str, RestartRule] = {}
    for task in tasks:
        members = set(announced[task].group) if task in announced else set()
        for group in flag_groups:
            if task in group:
                members.update(group)
        if not members:
            continue
        members.add(task)
        rule = announced.get(task)
        merged[task] = RestartRule(task, tuple(t for t in tasks if t in members),
                                   carry_on=rule.carry_on if rule else False,
                                   strategy=rule.strategy if rule else "",
                                   ends_by_itself=rule.ends_by_itself if rule else False)
    return merged
