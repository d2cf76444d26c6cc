"""Reading TF_CONFIG: decoding its JSON and validating every field.

`ClusterConfig.from_json` and `ClusterConfig.from_dict` (`trainexec.cluster`)
read TF_CONFIG through `decode` and `validate`. Every malformed input raises
`ConfigError` naming the field, the value and the expected form, so a typo
never reaches `RunConfig` or the gRPC server::

    TF_CONFIG task.index 3 is out of range for "worker" (cluster has 2 worker
    tasks, indices 0..1)

Shapes that real cluster managers write are accepted: an empty job list (a
Kubeflow TFJob's replica count of 0) is reported apart as an empty job, and an
evaluator that neither tf.estimator nor tf.distribute can run fails only that
evaluator.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from trainexec.errors import ConfigError
from trainexec.task_types import CHIEF, EVALUATOR, LOCAL, MASTER, SUPPORTED_TASK_TYPES

__all__ = ["RPC_LAYERS", "decode", "validate"]

RPC_LAYERS = ("grpc",)

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


def decode(text: str) -> Any:
    """The value of a TF_CONFIG JSON text (not validated yet)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"TF_CONFIG is not valid JSON ({err.msg} at column {err.colno}): "
            f"{_show(text)}; expected an object such as {_EXAMPLE}") from None


def validate(data: Any) -> dict[str, Any]:
    """The fields of a `ClusterConfig` (cluster, task_type, task_index, rpc_layer,
    environment, empty_jobs) from a decoded TF_CONFIG value, validated."""
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
    return dict(cluster=cluster, task_type=task_type, task_index=task_index,
                rpc_layer=rpc_layer, environment=environment, empty_jobs=empty_jobs)
