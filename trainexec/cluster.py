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

__all__ = [
    "CHIEF",
    "EVALUATOR",
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

CHIEF = "chief"
MASTER = "master"
WORKER = "worker"
PS = "ps"
EVALUATOR = "evaluator"
LOCAL = "local"

SUPPORTED_TASK_TYPES = (CHIEF, WORKER, MASTER, PS, EVALUATOR)
TRAINER_TYPES = (CHIEF, MASTER, WORKER)
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


def _parse_cluster(raw: Any) -> dict[str, tuple[str, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f"TF_CONFIG cluster is {_show(raw)} ({_type_name(raw)}): expected an "
            'object mapping job names to address lists, e.g. {"worker": ["host1:2222"]}')
    cluster: dict[str, tuple[str, ...]] = {}
    for job, addresses in raw.items():
        if not isinstance(addresses, list):
            raise ConfigError(
                f"TF_CONFIG cluster.{job} is {_show(addresses)} ({_type_name(addresses)}): "
                f'expected a list of "host:port" strings, e.g. "{job}": ["host1:2222"]')
        if not addresses:
            raise ConfigError(
                f"TF_CONFIG cluster.{job} is an empty list: list at least one "
                '"host:port" address or remove the job')
        cluster[job] = tuple(
            _check_address(f"cluster.{job}[{i}]", a) for i, a in enumerate(addresses))
    _check_job_sizes(cluster)
    _check_unique_addresses(cluster)
    return cluster


def _check_job_sizes(cluster: Mapping[str, tuple[str, ...]]) -> None:
    for job in (CHIEF, MASTER, EVALUATOR):
        if len(cluster.get(job, ())) > 1:
            raise ConfigError(
                f"TF_CONFIG cluster.{job} has {len(cluster[job])} tasks "
                f"{list(cluster[job])}: there can be only one {job}")
    if CHIEF in cluster and MASTER in cluster:
        raise ConfigError(
            "TF_CONFIG cluster has both a chief and a master: they are the same "
            "role (master is the TF 1.x name); keep one of them")
    if MASTER in cluster and EVALUATOR in cluster:
        raise ConfigError(
            "TF_CONFIG cluster has both a master and an evaluator: a master evaluates "
            "its own checkpoints; use a chief with the evaluator, or drop the evaluator")


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


def _parse_task(raw: Any, cluster: Mapping[str, tuple[str, ...]]) -> tuple[str | None, int | None]:
    if raw is None or raw == {}:
        if cluster:
            raise ConfigError(
                "TF_CONFIG has a cluster but no task: add "
                '"task": {"type": ..., "index": ...} naming which of the '
                f"cluster's tasks this process is (jobs: {', '.join(cluster)})")
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
        if MASTER in cluster:
            raise ConfigError(
                'TF_CONFIG task.type "evaluator" cannot join a cluster with a master: '
                "a master evaluates its own checkpoints; use a chief instead of the master")
        if index > 0:
            raise ConfigError(
                f"TF_CONFIG task.index {index} is out of range for \"evaluator\": "
                "there can be only one evaluator, with index 0")
        return task_type, index
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
    """

    cluster: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    task_type: str | None = None
    task_index: int | None = None
    rpc_layer: str = "grpc"
    environment: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "cluster", types.MappingProxyType(
            {job: tuple(addresses) for job, addresses in dict(self.cluster).items()}))

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
        cluster = _parse_cluster(data.get("cluster"))
        task_type, task_index = _parse_task(data.get("task"), cluster)
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
                   rpc_layer=rpc_layer, environment=environment)

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

        An evaluator listed in the cluster counts, as it does for RunConfig,
        which then gives the trainer a gRPC master to connect to.
        """
        return sum(len(a) for a in self.cluster.values()) == 1

    @property
    def is_google_environment(self) -> bool:
        return self.environment == GOOGLE_ENVIRONMENT

    # -- output ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
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
        """The TF_CONFIG text for this task (parses back to an equal config)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def for_task(self, task_type: str, task_index: int) -> "ClusterConfig":
        """The same cluster seen from another task (validated)."""
        data = self.to_dict()
        data["task"] = {"type": task_type, "index": task_index}
        return ClusterConfig.from_dict(data)

    def explain(self) -> str:
        """A human-readable summary of the cluster and this task's role."""
        if not self.cluster and self.task_type is None:
            return ("role: local (no cluster in TF_CONFIG): train and evaluate in "
                    "this one process")
        lines = []
        if self.cluster:
            lines.append(f"cluster ({self.rpc_layer}):")
            for job, addresses in self.cluster.items():
                for index, address in enumerate(addresses):
                    here = ""
                    if job == self.task_type and index == self.task_index:
                        here = "   <- this task"
                    lines.append(f"  {job + ':' + str(index):<12} {address}{here}")
        role = self.task_name
        facts = []
        if self.is_chief:
            facts.append("chief: saves checkpoints and records when training ends")
        if self.task_type == EVALUATOR:
            facts.append("evaluates new checkpoints; outside the training cluster")
        elif self.task_type == PS:
            facts.append("serves variables to the trainers until they have all finished")
        elif self.task_type in TRAINER_TYPES:
            facts.append(f"one of {self.num_workers} training tasks")
        lines.append(f"role: {role}" + (f" ({'; '.join(facts)})" if facts else ""))
        if self.environment:
            lines.append(f"environment: {self.environment}")
        return "\n".join(lines)
