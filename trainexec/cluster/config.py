"""TF_CONFIG -> `ClusterConfig`: the cluster as one process sees it, and what follows from it.

`TF_CONFIG` is the JSON environment variable every TensorFlow cluster manager
(Kubernetes TFJob, Vertex AI, `trainexec launch`) sets for each task:

```json
{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"],
             "ps": ["host2:2222"]},
 "task": {"type": "worker", "index": 0}}
```

Example:
    ```python
    cluster = ClusterConfig.from_env()      # reads os.environ["TF_CONFIG"]
    if cluster.role == "ps":
        ...
    print(cluster.to_json())                 # the normalised TF_CONFIG
    ```

`ClusterConfig` is frozen and hashable: parsed once, then the derived facts
(role, chief, training tasks, addresses) and the normalised TF_CONFIG for this
or another task. A job TF_CONFIG gives as an object of addresses by task
index (`"worker": {"1": "host1:2222"}`, as a Kubeflow TFJob with
`enableDynamicWorker` writes it) is a sparse job: this task sees only those
tasks of it. Sparse jobs are kept apart in `sparse_jobs`, so `cluster` keeps
its meaning (an address list per job, position = task index).

Reading TF_CONFIG is `trainexec.cluster.parsing`: every malformed input
raises `ConfigError` naming the field, the value and the expected form, so a
typo never reaches `RunConfig` or the gRPC server. What the cluster means to a
user (the producer shape recognised, what trainexec rewrote, the summary
`trainexec tfconfig` prints, which trainers can train it) is
`trainexec.cluster.verdicts`. Without TF_CONFIG, `from_env` builds the
cluster of a Slurm job step when `TRAINEXEC_SLURM_ROLES` says its roles
(`trainexec.cluster.slurm`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
from typing import Any, Mapping, Union

from trainexec.cluster.parsing import RPC_LAYERS, decode, validate
from trainexec.task_types import (CHIEF, ESTIMATOR, EVALUATOR, KERAS, LOCAL, MASTER, PS,
                                  SUPPORTED_TASK_TYPES, TRAINER_TYPES, WORKER)

__all__ = [
    "CHIEF",
    "ESTIMATOR",
    "EVALUATOR",
    "KERAS",
    "LOCAL",
    "MASTER",
    "PS",
    "RPC_LAYERS",
    "SUPPORTED_TASK_TYPES",
    "TF_CONFIG",
    "TRAINER_TYPES",
    "WORKER",
    "ClusterConfig",
    "JobTasks",
]

TF_CONFIG = "TF_CONFIG"
GOOGLE_ENVIRONMENT = "google"

# The tasks of one job: an address list (position = index), or a sparse job's
# {index: address} (what `tf.train.ClusterSpec` takes for either).
JobTasks = Union[tuple[str, ...], dict[int, str]]


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """The parsed, validated `TF_CONFIG` of one process.

    Attributes:
      cluster: job name -> addresses ("host:port"), read-only; empty when local.
      task_type: this task's job ("chief", "worker", ...) or None when local.
      task_index: this task's position in its job, or None when local.
      rpc_layer: the protocol for the TensorFlow server ("grpc").
      environment: TF_CONFIG's "environment" ("cloud", "google"...) or None.
      empty_jobs: sorted names of the jobs TF_CONFIG gave as empty lists (a
        Kubeflow TFJob's replica count of 0) or empty objects. They are absent
        from `cluster` and from every fact derived from it, except
        `is_single_node`.
      sparse_jobs: job name -> {task index: address}, read-only, for the jobs
        TF_CONFIG gave as objects (this task sees only the tasks listed). They
        are absent from `cluster`; the facts below count both (a job of
        `cluster` given as a mapping is moved here when the config is built).

    Configs are hashable and compare equal when all fields do (the order of
    the jobs in `cluster` does not matter).
    """

    cluster: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    task_type: str | None = None
    task_index: int | None = None
    rpc_layer: str = "grpc"
    environment: str | None = None
    empty_jobs: tuple[str, ...] = ()
    sparse_jobs: Mapping[str, Mapping[int, str]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        jobs: dict[str, tuple[str, ...]] = {}
        sparse: dict[str, Mapping[Any, str]] = {}
        for job, addresses in dict(self.cluster).items():
            if isinstance(addresses, Mapping):
                sparse[job] = addresses
            else:
                jobs[job] = tuple(addresses)
        for job, tasks in dict(self.sparse_jobs).items():
            if job in sparse or job in jobs:
                raise ValueError(f"job {job!r} is given both in cluster and in sparse_jobs")
            sparse[job] = tasks
        by_index = {job: dict(sorted((int(i), a) for i, a in dict(tasks).items()))
                    for job, tasks in sparse.items()}
        named = ((self.empty_jobs,) if isinstance(self.empty_jobs, str)
                 else tuple(self.empty_jobs))
        empty = {*named, *(job for job, addresses in jobs.items() if not addresses),
                 *(job for job, tasks in by_index.items() if not tasks)}
        object.__setattr__(self, "cluster", types.MappingProxyType(
            {job: addresses for job, addresses in jobs.items() if addresses}))
        object.__setattr__(self, "sparse_jobs", types.MappingProxyType(
            {job: types.MappingProxyType(tasks) for job, tasks in by_index.items() if tasks}))
        object.__setattr__(self, "empty_jobs", tuple(sorted(
            empty.difference(self.cluster, self.sparse_jobs))))

    def __hash__(self) -> int:
        # The generated hash would hash the read-only `cluster` mapping, which
        # cannot be hashed; this one uses its canonical (sorted) items instead.
        sparse = tuple(sorted((job, tuple(tasks.items()))
                              for job, tasks in self.sparse_jobs.items()))
        return hash((tuple(sorted(self.cluster.items())), self.task_type,
                     self.task_index, self.rpc_layer, self.environment, self.empty_jobs,
                     sparse))

    # -- parsing ---------------------------------------------------------------------
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "ClusterConfig":
        """Parses `TF_CONFIG` from `environ` (default `os.environ`).

        Without TF_CONFIG but with `TRAINEXEC_SLURM_ROLES` set, the cluster is
        the Slurm job step's (`trainexec.cluster.slurm`)."""
        environ = os.environ if environ is None else environ
        text = environ.get(TF_CONFIG, "")
        if not text.strip():
            from trainexec.cluster.slurm import SlurmStep

            step = SlurmStep.from_env(environ)
            if step is not None:
                return cls.from_dict(step.tf_config())
        return cls.from_json(text)

    @classmethod
    def from_json(cls, text: str) -> "ClusterConfig":
        """Parses a TF_CONFIG JSON text; empty text means a local run."""
        if not text or not text.strip():
            return cls()
        return cls.from_dict(decode(text))

    @classmethod
    def from_dict(cls, data: Any) -> "ClusterConfig":
        """Validates an already-decoded TF_CONFIG value."""
        return cls(**validate(data))

    # -- derived facts ---------------------------------------------------------------
    @property
    def role(self) -> str:
        """The role this process plays: a task type, or "local"."""
        return self.task_type or LOCAL

    @property
    def is_distributed(self) -> bool:
        """True when there is a cluster (the evaluator of a cluster counts)."""
        return bool(self.cluster or self.sparse_jobs)

    @property
    def is_sparse(self) -> bool:
        """True when this task sees only part of the cluster (a sparse job)."""
        return bool(self.sparse_jobs)

    @property
    def jobs(self) -> dict[str, JobTasks]:
        """Every job with tasks: `cluster`'s address lists, then the sparse jobs
        as {index: address} (a new dict, as `tf.train.ClusterSpec` takes it)."""
        jobs: dict[str, JobTasks] = dict(self.cluster)
        jobs.update((job, dict(tasks)) for job, tasks in self.sparse_jobs.items())
        return jobs

    @property
    def indexed_jobs(self) -> dict[str, tuple[tuple[int, str], ...]]:
        """Every job with tasks as (index, address) pairs, dense and sparse alike."""
        return {job: tuple(tasks.items() if isinstance(tasks, dict) else enumerate(tasks))
                for job, tasks in self.jobs.items()}

    @property
    def has_chief(self) -> bool:
        jobs = (*self.cluster, *self.sparse_jobs)
        return CHIEF in jobs or MASTER in jobs

    @property
    def is_chief(self) -> bool:
        """True for the task that saves checkpoints and records completion.

        The chief (or master); worker 0 when the cluster has neither (and is
        seen whole: a task of a sparse cluster cannot tell); the single process
        of a local run.
        """
        if self.task_type is None:
            return True
        if self.task_type in (CHIEF, MASTER):
            return True
        return (self.task_type == WORKER and self.task_index == 0 and not self.has_chief
                and not self.is_sparse)

    @property
    def chief_task(self) -> str | None:
        """The task that writes checkpoints and records completion: `chief:0`,
        `master:0`, else `worker:0`; None for a local run."""
        if not self.cluster and not self.sparse_jobs:
            return None
        for job in (CHIEF, MASTER):
            if job in self.jobs:
                return f"{job}:0"
        return f"{WORKER}:0"

    @property
    def num_workers(self) -> int:
        """Training tasks: chief/master plus workers (1 for a local run); those
        listed, in a sparse cluster."""
        return len(self.training_tasks) if self.is_distributed else 1

    @property
    def training_tasks(self) -> tuple[str, ...]:
        """Names ("worker:1") of the tasks that train: chief or master, workers
        (those listed, for a sparse job)."""
        return tuple(f"{job}:{index}" for job in TRAINER_TYPES
                     for index in self._indices(job))

    def _indices(self, job: str) -> tuple[int, ...]:
        if job in self.sparse_jobs:
            return tuple(self.sparse_jobs[job])
        return tuple(range(len(self.cluster.get(job, ()))))

    @property
    def task_name(self) -> str:
        """This task as "worker:1" ("local" for a local run)."""
        return LOCAL if self.task_type is None else f"{self.task_type}:{self.task_index}"

    @property
    def num_ps(self) -> int:
        return len(self._indices(PS))

    @property
    def training_cluster(self) -> dict[str, JobTasks]:
        """The cluster without the evaluator, which stands outside training, as
        `tf.train.ClusterSpec` takes it: address lists, and a sparse job as a
        new {index: address} dict."""
        return {job: a for job, a in self.jobs.items() if job != EVALUATOR}

    @property
    def task_address(self) -> str | None:
        """This task's "host:port", or None (local, or an outside evaluator)."""
        if self.task_index is None:
            return None
        if self.task_type is not None and self.task_type in self.sparse_jobs:
            return self.sparse_jobs[self.task_type].get(self.task_index)
        addresses = self.cluster.get(self.task_type or "", ())
        if self.task_index >= len(addresses):
            return None
        return addresses[self.task_index]

    @property
    def is_single_node(self) -> bool:
        """The whole cluster is one task (a trainer that needs no server).

        An evaluator listed in the cluster counts, and so does an empty job, as
        they do for RunConfig, which then gives the trainer a gRPC master to
        connect to. A sparse cluster is never one task: this task sees only
        part of it.
        """
        return (sum(len(a) for a in self.cluster.values()) == 1 and not self.empty_jobs
                and not self.sparse_jobs)

    @property
    def is_google_environment(self) -> bool:
        return self.environment == GOOGLE_ENVIRONMENT

    # -- output ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The normalised TF_CONFIG value: empty jobs are left out; a sparse job is
        an object of addresses by task index ({"1": "host1:2222"})."""
        data: dict[str, Any] = {}
        if self.is_distributed:
            data["cluster"] = {job: list(a) for job, a in self.cluster.items()}
            data["cluster"].update(
                (job, {str(i): a for i, a in tasks.items()})
                for job, tasks in self.sparse_jobs.items())
        if self.task_type is not None:
            data["task"] = {"type": self.task_type, "index": self.task_index}
        if self.rpc_layer != "grpc":
            data["rpc_layer"] = self.rpc_layer
        if self.environment is not None:
            data["environment"] = self.environment
        return data

    def to_json(self) -> str:
        """The normalised TF_CONFIG text for this task.

        It parses back to an equal config, but for `empty_jobs`: empty jobs are
        left out, so that tf.estimator's RunConfig accepts it for every task
        (TF 2.15's fails for some tasks of a cluster with an empty job).
        """
        return json.dumps(self.to_dict(), sort_keys=True)

    def for_task(self, task_type: str, task_index: int) -> "ClusterConfig":
        """The same cluster seen from another task (validated)."""
        data = self.to_dict()
        if self.empty_jobs:
            data["cluster"] = {**data.get("cluster", {}),
                               **{job: [] for job in self.empty_jobs}}
        data["task"] = {"type": task_type, "index": task_index}
        return ClusterConfig.from_dict(data)
