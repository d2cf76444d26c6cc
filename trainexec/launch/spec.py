"""The cluster a launcher starts: free ports, the cluster spec, one TF_CONFIG per task.

`plan_job` picks a free port per task in the cluster, builds the spec and
gives each task its TF_CONFIG, its command and its environment, as a `TaskSpec`
(nothing started), in one of two shapes:

* `LAUNCH` (`trainexec launch`): the chief, workers and ps in `cluster`, the
  evaluator outside it; each TF_CONFIG validated by `ClusterConfig`;
* `TFJOB` (`trainexec launch --from`): as the Kubeflow training operator writes
  it (`trainexec.jobs.tf_config`): every role in `cluster`, the evaluator and
  empty roles too, `"environment": "cloud"`, no TF_CONFIG for a job of one
  task; `TFJOB_SPARSE` is its `enableDynamicWorker` view. 127.0.0.1 ports stand
  in for the pods' service names.

`plan_tasks` is `plan_job` for the launcher's counts.
"""

from __future__ import annotations

import types

import portpicker

from trainexec.cluster.config import EVALUATOR, ClusterConfig
from trainexec.errors import ConfigError
from trainexec.jobs.shape import JobShape
from trainexec.jobs.tf_config import is_distributed, tfjob_tf_config
from trainexec.launch.task import TaskSpec

__all__ = ["LAUNCH", "TFJOB", "TFJOB_SPARSE", "TF_CONFIG_SHAPES", "format_address",
           "pick_ports", "plan_job", "plan_tasks"]

LAUNCH = "launch"
TFJOB = "tfjob"
TFJOB_SPARSE = "tfjob-sparse"
TF_CONFIG_SHAPES = (LAUNCH, TFJOB, TFJOB_SPARSE)


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
               evaluator: bool) -> tuple[dict[str, list[str]], list[TaskSpec]]:
    """The cluster spec ({"chief": ["127.0.0.1:1234"], ...}) and every task in order:
    chief, workers, ps, evaluator. Raises ConfigError if a TF_CONFIG is invalid."""
    job = JobShape.from_counts(None, workers=workers, ps=ps, evaluator=evaluator, chief=chief)
    return plan_job(job, host, LAUNCH)


def plan_job(job: JobShape, host: str, tf_config: str = LAUNCH
             ) -> tuple[dict[str, list[str]], list[TaskSpec]]:
    """The cluster spec and every task of `job` in TF_CONFIG order, with TF_CONFIG in
    the `tf_config` shape (see the module doc). Raises ConfigError if a TF_CONFIG
    is invalid (LAUNCH) or the shape is unknown."""
    if tf_config not in TF_CONFIG_SHAPES:
        raise ConfigError(f"tf_config {tf_config!r}: use one of {', '.join(TF_CONFIG_SHAPES)}")
    outside = (EVALUATOR,) if tf_config == LAUNCH else ()
    in_cluster = [role for role in job.roles if role.task_type not in outside]
    ports = iter(pick_ports(sum(role.count for role in in_cluster)))
    spec = {role.task_type: [format_address(host, next(ports)) for _ in range(role.count)]
            for role in in_cluster if role.count or tf_config != LAUNCH}
    base = (ClusterConfig(cluster={job: tuple(addresses) for job, addresses in spec.items()})
            if tf_config == LAUNCH else None)
    distributed = is_distributed(job)
    tasks: list[TaskSpec] = []
    text: str | None  # a task's TF_CONFIG; None: it runs without one
    address: str | None
    for role in job.roles:
        for index in range(role.count):
            if base is not None:
                config = base.for_task(role.task_type, index)  # validates
                text, address = config.to_json(), config.task_address
            else:
                address = spec[role.task_type][index]
                text = (tfjob_tf_config(spec, role.task_type, index,
                                        sparse=tf_config == TFJOB_SPARSE)
                        if distributed else None)
            tasks.append(TaskSpec(role.task_type, index, text, address,
                                  command=tuple(role.command or ()),
                                  env=types.MappingProxyType(dict(role.env_dict))))
    return spec, tasks
