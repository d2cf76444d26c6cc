"""The TF_CONFIG the Kubeflow training operator (v1.9) writes for each pod of a TFJob.

Every replica type of the job is in `cluster`, lowercased, the evaluator too
(a type with 0 replicas as an empty list), each address the pod's headless
service `<job>-<type>-<i>.<namespace>.svc:<port>`; `task` is the pod's type
and index; `"environment": "cloud"`. The operator writes it as Go's JSON
encoder does: no spaces, `cluster` keys sorted. A job of one replica in all
gets no TF_CONFIG (the operator calls it local). With `enableDynamicWorker:
true` the view is sparse: a worker sees itself (keyed by its index) and every
ps, a ps only itself, every other task neither; no "environment".

`tfjob_tf_config` takes the addresses, so a local run puts 127.0.0.1 ports where
the cluster has service names (`service_addresses`).

Example:
    ```python
    cluster = {"chief": ["127.0.0.1:4001"], "worker": ["127.0.0.1:4002"]}
    tfjob_tf_config(cluster, "worker", 0)
    # '{"cluster":{"chief":["127.0.0.1:4001"],"worker":["127.0.0.1:4002"]},
    #   "task":{"type":"worker","index":0},"environment":"cloud"}'
    ```
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

from trainexec.jobs.naming import DEFAULT_PORT
from trainexec.jobs.shape import JobShape
from trainexec.task_types import PS, WORKER

__all__ = ["is_distributed", "service_addresses", "tfjob_tf_config"]


def is_distributed(shape: JobShape) -> bool:
    """Whether the operator writes TF_CONFIG for this job: not for one replica in all."""
    return shape.task_count != 1


def service_addresses(shape: JobShape, name: str, namespace: str = "default",
                      port: int | Mapping[str, int] = DEFAULT_PORT) -> dict[str, list[str]]:
    """The cluster the operator writes: every role's service addresses (`port` one for
    all, or per task type)."""
    def port_of(task_type: str) -> int:
        return port.get(task_type, DEFAULT_PORT) if isinstance(port, Mapping) else port

    return {role.task_type: [f"{name}-{role.task_type}-{i}.{namespace}.svc:"
                             f"{port_of(role.task_type)}" for i in range(role.count)]
            for role in shape.roles}


def tfjob_tf_config(cluster: Mapping[str, Sequence[str]], task_type: str, index: int,
                    sparse: bool = False) -> str:
    """The TF_CONFIG of task `task_type:index` in `cluster` (every role, empty ones too)."""
    task = {"type": task_type, "index": index}
    if sparse:
        view: dict = {"worker": {}, "ps": []}
        if task_type == WORKER:
            view = {"worker": {str(index): cluster[WORKER][index]},
                    "ps": list(cluster.get(PS, []))}
        elif task_type == PS:
            view = {"worker": {}, "ps": [cluster[PS][index]]}
        return json.dumps({"cluster": view, "task": task}, separators=(",", ":"))
    ordered = {job: list(cluster[job]) for job in sorted(cluster)}
    return json.dumps({"cluster": ordered, "task": task, "environment": "cloud"},
                      separators=(",", ":"))
