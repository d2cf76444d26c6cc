"""A job's shape as a Vertex AI CustomJob, as plain data (printed as JSON): pure.

Vertex AI reads a job's roles from the position of its worker pools:
`workerPoolSpecs[0]` is the chief (the primary replica, exactly one),
`[1]` the workers, `[2]` the parameter servers, `[3]` the evaluators, and it
writes TF_CONFIG from them. A role left out in the middle is an empty pool
(`{}`); trailing empty pools are left off. Each pool has its `replicaCount`,
`machineSpec.machineType` and a `containerSpec` with the image, the program
(`command`), its arguments (`args`) and the environment.

What a site adds (`trainexec.jobs.site_options.VertexOptions`): an accelerator
in the `machineSpec` of the training pools (chief and workers:
`acceleratorType`, `acceleratorCount`), `nfsMounts` in every pool, and the
job's `serviceAccount` and `network` in `jobSpec`.

A job without a chief has no Vertex form (pool 0 is always the chief):
`render_vertex` raises ValueError; the command line says so first.

Example:
    ```python
    job = JobShape.from_counts(["python", "train.py"], workers=2, evaluator=True, name="demo")
    render_vertex(job, image="gcr.io/me/train:1", machine_type="n1-standard-4")
    # {"displayName": "demo", "jobSpec": {"workerPoolSpecs": [chief, workers, {}, evaluator]}}
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.jobs.shape import JobShape, Role
from trainexec.jobs.site_options import VertexOptions
from trainexec.task_types import EVALUATOR, PS, WORKER

__all__ = ["render_vertex"]


def _pool(role: Role, image: str, machine_type: str, options: VertexOptions,
          trains: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"imageUri": image}
    if role.command:
        container["command"] = list(role.command[:1])
        container["args"] = list(role.command[1:])
    if role.env:
        container["env"] = [{"name": name, "value": value} for name, value in role.env]
    machine: dict[str, Any] = {"machineType": machine_type}
    if trains and options.accelerator_type:
        machine["acceleratorType"] = options.accelerator_type
        machine["acceleratorCount"] = options.accelerator_count
    pool: dict[str, Any] = {"replicaCount": role.count, "machineSpec": machine,
                            "containerSpec": container}
    if options.nfs_mounts:
        pool["nfsMounts"] = [{"server": m.server, "path": m.path, "mountPoint": m.mount_point}
                             for m in options.nfs_mounts]
    return pool


def render_vertex(shape: JobShape, *, image: str, machine_type: str,
                  options: VertexOptions = VertexOptions()) -> dict[str, Any]:
    """The CustomJob running `shape` (its `name` is the display name) from `image`,
    with what `options` adds."""
    if shape.leader is None:
        raise ValueError("a Vertex AI job needs a chief: worker pool 0 is its primary replica")
    roles = [shape.role(shape.leader), shape.role(WORKER), shape.role(PS), shape.role(EVALUATOR)]
    pools = [_pool(role, image, machine_type, options, trains=i < 2)
             if role and role.count else {} for i, role in enumerate(roles)]
    while pools and not pools[-1]:
        pools.pop()
    job_spec: dict[str, Any] = {"workerPoolSpecs": pools}
    if options.service_account:
        job_spec["serviceAccount"] = options.service_account
    if options.network:
        job_spec["network"] = options.network
    return {"displayName": shape.name, "jobSpec": job_spec}
