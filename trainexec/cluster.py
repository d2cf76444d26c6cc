"""TF_CONFIG -> `ClusterConfig`: parse once, validate, explain, serialise.

`TF_CONFIG` is the JSON environment variable every TensorFlow cluster manager
(Kubernetes TFJob, Vertex AI, `trainexec launch`) sets for each task::

    {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"],
                 "ps": ["host2:2222"]},
     "task": {"type": "worker", "index": 0}}

Example::

    cluster = ClusterConfig.from_env()      # reads os.environ["TF_CONFIG"]
    if cluster.role == "ps":
        ...
    print(cluster.explain())

Every malformed input raises `ConfigError` naming the field, the value and the
expected form, so a typo never reaches `RunConfig` or the gRPC server.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import types
from typing import Any, Mapping

from trainexec.errors import ConfigError
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
RPC_LAYERS = ("grpc",)
GOOGLE_ENVIRONMENT = "google"

_EXAMPLE = (
    '{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"]}, '
    '"task": {"type": "worker", "index": 0}}'
)
_HOST_PORT = re.compile(r"^(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<host>[^\s:\[\]/]+)):(?P<port>\d+)$")


def _show(value: Any, limit: int = 120) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


def _check_address(field: str, address: Any) -> str:
    if not isinstance(address, str):
        raise ConfigError(
            f'TF_CONFIG {field} is {_show(address)} ({_type_name(address)}): '
            'expected a "host:port" string such as "localhost:2222"')
    match = _HOST_PORT.match(address.strip())
    if not match:
        raise ConfigError(
            f'TF_CONFIG {field} {_show(address)} is not a "host:port" address: '
            'write it as "host:port", e.g. "10.0.0.2:2222" or "[::1]:2222"')
    port = int(match.group("port"))
    if not 1 <= port <= 65535:
        raise ConfigError(
            f"TF_CONFIG {field} {_show(address)} has port {port}: "
            "a port must be between 1 and 65535")
    return address.strip()


def _parse_cluster(raw: Any) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """(jobs with addresses, names of the jobs given as empty lists)."""
    if raw is None:
        return {}, ()
    if not isinstance(raw, dict):
        raise ConfigError(
            f"TF_CONFIG cluster is {_show(raw)} ({_type_name(raw)}): expected an "
            'object mapping job names to address lists, e.g. {"worker": ["host1:2222"]}')
    cluster: dict[str, tuple[str, ...]] = {}
    empty_jobs: list[str] = []
    for job, addresses in raw.items():
        if not isinstance(addresses, list):
            raise ConfigError(
                f"TF_CONFIG cluster.{job} is {_show(addresses)} ({_type_name(addresses)}): "
                f'expected a list of "host:port" strings, e.g. "{job}": ["host1:2222"]')
        if not addresses:
            # A Kubeflow TFJob writes a replica count of 0 this way: the job is absent.
            empty_jobs.append(job)
            continue
        cluster[job] = tuple(
            _check_address(f"cluster.{job}[{i}]", a) for i, a in enumerate(addresses))
    _check_job_sizes(cluster)
    _check_unique_addresses(cluster)
    return cluster, tuple(sorted(empty_jobs))


def _check_job_sizes(cluster: Mapping[str, tuple[str, ...]]) -> None:
    # Both tf.estimator's RunConfig and tf.distribute refuse these for every task.
    # (Several evaluators, or a master beside an evaluator, only stop the
    # evaluator tasks concerned: see _check_evaluator.)
    for job in (CHIEF, MASTER):
        if len(cluster.get(job, ())) > 1:
            raise ConfigError(
                f"TF_CONFIG cluster.{job} has {len(cluster[job])} tasks "
                f"{list(cluster[job])}: there can be only one {job}")
    if CHIEF in cluster and MASTER in cluster:
        raise ConfigError(
            "TF_CONFIG cluster has both a chief and a master: they are the same "
            "role (master is the TF 1.x name); keep one of them")


def _check_unique_addresses(cluster: Mapping[str, tuple[str, ...]]) -> None:
    seen: dict[str, str] = {}
    for job, addresses in cluster.items():
        for index, address in enumerate(addresses):
            task = f"{job}[{index}]"
            if address in seen:
                raise ConfigError(
                    f"TF_CONFIG cluster.{task} and cluster.{seen[address]} both use "
                    f"{_show(address)}: every task needs its own host:port")
            seen[address] = task


def _check_evaluator(index: int, cluster: Mapping[str, tuple[str, ...]]) -> None:
    """Refuses an evaluator task that neither tf.estimator nor tf.distribute runs.

    The rest of such a cluster trains: only this task fails.
    """
    if MASTER in cluster:
        raise ConfigError(
            f'TF_CONFIG task.type "evaluator" cannot join a cluster with a master, so '
            f"evaluator:{index} cannot run: tf.estimator refuses an evaluator beside a "
            "master (the master evaluates its own checkpoints after each save) and "
            'tf.distribute has no "master" job. The master trains; to keep this evaluator, '
            "rename the TFJob's Master replica spec to Chief (cluster.master -> "
            "cluster.chief), or else remove the Evaluator replica spec")
    if index > 0:
        listed = len(cluster.get(EVALUATOR, ()))
        shown = f"; cluster.evaluator lists {listed}" if listed > 1 else ""
        raise ConfigError(
            f"TF_CONFIG task evaluator:{index} cannot run: there can be only one "
            "evaluator, with index 0 (tf.estimator.train_and_evaluate and tf.distribute "
            f"each run a single evaluator{shown}). Set the TFJob's Evaluator replicas "
            "to 1; the chief and workers train regardless")


def _parse_task(raw: Any, cluster: Mapping[str, tuple[str, ...]],
                empty_jobs: tuple[str, ...] = ()) -> tuple[str | None, int | None]:
    if raw is None or raw == {}:
        if cluster or empty_jobs:
            raise ConfigError(
                "TF_CONFIG has a cluster but no task: add "
                '"task": {"type": ..., "index": ...} naming which of the '
                f"cluster's tasks this process is (jobs: {', '.join([*cluster, *empty_jobs])})")
        return None, None
    if not isinstance(raw, dict):
        raise ConfigError(
            f"TF_CONFIG task is {_show(raw)} ({_type_name(raw)}): expected an object "
            'such as {"type": "worker", "index": 0}')
    if "type" not in raw:
        raise ConfigError(
            f"TF_CONFIG task {_show(raw)} has no type: add \"type\", one of "
            f"{', '.join(SUPPORTED_TASK_TYPES)}")
    task_type = raw["type"]
    if not isinstance(task_type, str):
        raise ConfigError(
            f"TF_CONFIG task.type is {_show(task_type)} ({_type_name(task_type)}): "
            f"expected a string, one of {', '.join(SUPPORTED_TASK_TYPES)}")
    if task_type == LOCAL:
        raise ConfigError(
            'TF_CONFIG task.type cannot be "local": to train and evaluate on one '
            "machine leave out both cluster and task (or unset TF_CONFIG)")
    if task_type not in SUPPORTED_TASK_TYPES:
        raise ConfigError(
            f"TF_CONFIG task.type {_show(task_type)} is not supported: use one of "
            f"{', '.join(SUPPORTED_TASK_TYPES)}")
    if "index" not in raw:
        raise ConfigError(
            f'TF_CONFIG task {_show(raw)} has no index: add "index", the '
            f"0-based position of this task in cluster.{task_type}")
    index = raw["index"]
    if isinstance(index, bool) or not isinstance(index, int):
        raise ConfigError(
            f"TF_CONFIG task.index is {_show(index)} ({_type_name(index)}): "
            "expected a non-negative integer such as 0")
    if index < 0:
        raise ConfigError(
            f"TF_CONFIG task.index {index} is negative: expected a non-negative "
            f"integer, the position of this task in cluster.{task_type}")
    if task_type == EVALUATOR:
        _check_evaluator(index, cluster)
        return task_type, index
    if task_type in empty_jobs:
        raise ConfigError(
            f"TF_CONFIG cluster.{task_type} is an empty list, so task {task_type}:{index} "
            f'has no address: list its "host:port" in cluster.{task_type} (a TFJob '
            "writes an empty list for a replica count of 0)")
    if not cluster:
        raise ConfigError(
            f'TF_CONFIG task.type "{task_type}" needs a cluster: add "cluster" '
            f"listing every task's address, e.g. {_EXAMPLE}")
    if task_type not in cluster:
        raise ConfigError(
            f'TF_CONFIG task.type "{task_type}" is not a job in the cluster '
            f"(jobs: {', '.join(cluster)}): add cluster.{task_type} or fix the type")
    size = len(cluster[task_type])
    if index >= size:
        plural = "task" if size == 1 else "tasks"
        raise ConfigError(
            f'TF_CONFIG task.index {index} is out of range for "{task_type}" '
            f"(cluster has {size} {task_type} {plural}, indices 0..{size - 1})")
    return task_type, index


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
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"TF_CONFIG is not valid JSON ({err.msg} at column {err.colno}): "
                f"{_show(text)}; expected an object such as {_EXAMPLE}") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> "ClusterConfig":
        """Validates an already-decoded TF_CONFIG value."""
        if not isinstance(data, dict):
            raise ConfigError(
                f"TF_CONFIG is {_show(data)} ({_type_name(data)}): expected a JSON "
                f"object such as {_EXAMPLE}")
        cluster, empty_jobs = _parse_cluster(data.get("cluster"))
        task_type, task_index = _parse_task(data.get("task"), cluster, empty_jobs)
        rpc_layer = data.get("rpc_layer") or "grpc"
        if rpc_layer not in RPC_LAYERS:
            raise ConfigError(
                f"TF_CONFIG rpc_layer {_show(rpc_layer)} is not supported: the "
                f"standard TensorFlow server speaks {', '.join(map(repr, RPC_LAYERS))} "
                "(the default when rpc_layer is left out)")
        environment = data.get("environment")
        if environment is not None and not isinstance(environment, str):
            raise ConfigError(
                f"TF_CONFIG environment is {_show(environment)} "
                f"({_type_name(environment)}): expected a string such as \"cloud\"")
        return cls(cluster=cluster, task_type=task_type, task_index=task_index,
                   rpc_layer=rpc_layer, environment=environment, empty_jobs=empty_jobs)

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

    def explain(self) -> str:
        """A human-readable summary of the cluster and this task's role."""
        from trainexec.cluster_verdicts import explain

        return explain(self)

    def trainer_support(self) -> dict[str, str]:
        """Whether each trainer can train this cluster, judged from its shape alone
        (see `trainexec.cluster_verdicts.trainer_support`)."""
        from trainexec.cluster_verdicts import trainer_support

        return trainer_support(self)

    @property
    def run_config_fails_on(self) -> str | None:
        """The empty job on which TF 2.15's `tf.estimator.RunConfig` fails for this
        task (see `trainexec.cluster_verdicts.run_config_fails_on`)."""
        from trainexec.cluster_verdicts import run_config_fails_on

        return run_config_fails_on(self)
