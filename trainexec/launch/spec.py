"""The cluster a launcher starts: free ports, the cluster spec, one TF_CONFIG per task.

`plan_tasks` picks a free port per cluster task (chief, workers, ps), builds
the spec and gives each task, and the optional evaluator (outside the
cluster), its validated TF_CONFIG as a `Task` not started yet.
"""

from __future__ import annotations

import portpicker

from trainexec.cluster import CHIEF, EVALUATOR, PS, WORKER, ClusterConfig
from trainexec.launch.task import Task

__all__ = ["format_address", "pick_ports", "plan_tasks"]


def format_address(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def pick_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = portpicker.pick_unused_port()
        if port not in ports:
            ports.append(port)
    return ports


def plan_tasks(host: str, chief: bool, workers: int, ps: int,
               evaluator: bool) -> tuple[dict[str, list[str]], list[Task]]:
    """The cluster spec ({"chief": ["127.0.0.1:1234"], ...}) and every task in order:
    chief, workers, ps, evaluator. Raises ConfigError if a TF_CONFIG is invalid."""
    jobs = [(CHIEF, 1 if chief else 0), (WORKER, workers), (PS, ps)]
    ports = iter(pick_ports(sum(n for _, n in jobs)))
    spec = {job: [format_address(host, next(ports)) for _ in range(n)]
            for job, n in jobs if n}
    base = ClusterConfig(cluster=spec)
    members = [(job, i) for job, n in jobs for i in range(n)]
    if evaluator:
        members.append((EVALUATOR, 0))
    tasks: list[Task] = []
    for task_type, index in members:
        config = base.for_task(task_type, index)  # validates
        tasks.append(Task(task_type, index, config.to_json(), config.task_address))
    return spec, tasks
