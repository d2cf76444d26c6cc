"""TF_CONFIG -> `ClusterConfig`: the cluster as one process sees it, and what follows from it.

`TF_CONFIG` is the JSON environment variable every TensorFlow cluster manager
(Kubernetes TFJob, Vertex AI, `trainexec launch`) sets for each task::

    {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"],
                 "ps": ["host2:2222"]},
     "task": {"type": "worker", "index": 0}}

Example::

    cluster = ClusterConfig.from_env()      # reads os.environ["TF_CONFIG"]
    if cluster.role == "ps":
        ...
    print(cluster.to_json())                 # the normalised TF_CONFIG

`ClusterConfig` is frozen and hashable: parsed once, then the derived facts
(role, chief, training tasks, addresses) and the normalised TF_CONFIG for this
or another task. Reading TF_CONFIG is `trainexec.cluster_parsing`: every
malformed input raises `ConfigError` naming the field, the value and the
expected form, so a typo never reaches `RunConfig` or the gRPC server. What
the cluster means to a user (the summary `trainexec tfconfig` prints, which
trainers can train it) is `trainexec.cluster_verdicts`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
from typing import Any, Mapping

from trainexec.cluster_parsing import RPC_LAYERS, decode, validate
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
]

TF_CONFIG = "TF_CONFIG"
GOOGLE_ENVIRONMENT = "google"


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
        Kubeflow TFJob's replica count of 0). They are absent from `cluster`
        and from every fact derived from it, except `is_single_node`.

    Configs are hashable and compare equal when all fields do (the order of
    the jobs in `cluster` does not matter).
    """

    cluster: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    task_type: str | None = None
    task_index: int | None = None
    rpc_layer: str = "grpc"
    environment: str | None = None
    empty_jobs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        jobs = {job: tuple(addresses) for job, addresses in dict(self.cluster).items()}
        named = ((self.empty_jobs,) if isinstance(self.empty_jobs, str)
                 else tuple(self.empty_jobs))
        empty = {*named, *(job for job, addresses in jobs.items() if not addresses)}
        object.__setattr__(self, "cluster", types.MappingProxyType(
            {job: addresses for job, addresses in jobs.items() if addresses}))
        object.__setattr__(self, "empty_jobs",
                           tuple(sorted(empty.difference(self.cluster))))

    def __hash__(self) -> int:
        # The generated hash would hash the read-only `cluster` mapping, which
        # cannot be hashed; this one uses its canonical (sorted) items instead.
        return hash((tuple(sorted(self.cluster.items())), self.task_type,
                     self.task_index, self.rpc_layer, self.environment, self.empty_jobs))

    # -- parsing ---------------------------------------------------------------------
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "ClusterConfig":
        """Parses `TF_CONFIG` from `environ` (default `os.environ`)."""
        environ = os.environ if environ is None else environ
        return cls.from_json(environ.get(TF_CONFIG, ""))

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
        return bool(self.cluster)

    @property
    def has_chief(self) -> bool:
        return CHIEF in self.cluster or MASTER in self.cluster

    @property
    def is_chief(self) -> bool:
        """True for the task that saves checkpoints and records completion.

        The chief (or master); worker 0 when the cluster has neither; the
        single process of a local run.
        """
        if self.task_type is None:
            return True
        if self.task_type in (CHIEF, MASTER):
            return True
        return self.task_type == WORKER and self.task_index == 0 and not self.has_chief

    @property
    def num_workers(self) -> int:
        """Training tasks: chief/master plus workers (1 for a local run)."""
        return len(self.training_tasks) if self.cluster else 1

    @property
    def training_tasks(self) -> tuple[str, ...]:
        """Names ("worker:1") of the tasks that train: chief or master, workers."""
        return tuple(f"{job}:{index}" for job in TRAINER_TYPES
                     for index in range(len(self.cluster.get(job, ()))))

    @property
    def task_name(self) -> str:
        """This task as "worker:1" ("local" for a local run)."""
        return LOCAL if self.task_type is None else f"{self.task_type}:{self.task_index}"

    @property
    def num_ps(self) -> int:
        return len(self.cluster.get(PS, ()))

    @property
    def training_cluster(self) -> dict[str, tuple[str, ...]]:
        """The cluster without the evaluator, which stands outside training."""
        return {job: a for job, a in self.cluster.items() if job != EVALUATOR}

    @property
    def task_address(self) -> str | None:
        """This task's "host:port", or None (local, or an outside evaluator)."""
        addresses = self.cluster.get(self.task_type or "", ())
        if self.task_index is None or self.task_index >= len(addresses):
            return None
        return addresses[self.task_index]

    @property
    def is_single_node(self) -> bool:
        """The whole cluster is one task (a trainer that needs no server).

        An evaluator listed in the cluster counts, and so does an empty job, as
        they do for RunConfig, which then gives the trainer a gRPC master to
        connect to.
        """
        return sum(len(a) for a in self.cluster.values()) == 1 and not self.empty_jobs

    @property
    def is_google_environment(self) -> bool:
        return self.environment == GOOGLE_ENVIRONMENT

    # -- output ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The normalised TF_CONFIG value: empty jobs are left out."""
        data: dict[str, Any] = {}
        if self.cluster:
            data["cluster"] = {job: list(a) for job, a in self.cluster.items()}
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
