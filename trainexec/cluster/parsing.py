"""Reading TF_CONFIG: decoding its JSON and validating every field.

`ClusterConfig.from_json` and `ClusterConfig.from_dict` (`trainexec.cluster.config`)
read TF_CONFIG through `decode` and `validate`. Every malformed input raises
`ConfigError` naming the field, the value and the expected form, so a typo
never reaches `RunConfig` or the gRPC server:

```text
TF_CONFIG task.index 3 is out of range for "worker" (cluster has 2 worker
tasks, indices 0..1)
```

Shapes that real cluster managers write are accepted: an empty job list (a
Kubeflow TFJob's replica count of 0) is reported apart as an empty job, and an
evaluator that neither tf.estimator nor tf.distribute can run fails only that
evaluator. A job given as an object maps task indices to addresses (a sparse
job: `"worker": {"1": "host1:2222"}`, which `tf.train.ClusterSpec` accepts);
that is how a Kubeflow TFJob with `enableDynamicWorker: true` writes each
worker's view, and its ps see only themselves (`"ps": ["own:2222"]` whatever
their index), read as `{index: own address}`. The chief, master or evaluator
of such a TFJob is given no address at all and cannot run: they fail, naming
the fix.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Mapping

from trainexec.errors import ConfigError
from trainexec.task_types import (CHIEF, EVALUATOR, LOCAL, MASTER, PS,
                                  SUPPORTED_TASK_TYPES)

__all__ = ["DYNAMIC_WORKER_FIX", "RPC_LAYERS", "decode", "validate"]

RPC_LAYERS = ("grpc",)

_EXAMPLE = (
    '{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"]}, '
    '"task": {"type": "worker", "index": 0}}'
)
_INDEX_KEY = re.compile(r"^(?:0|[1-9][0-9]*)$")
DYNAMIC_WORKER_FIX = (
    "set enableDynamicWorker: false (or leave it out) in the TFJob spec: trainexec's "
    "trainers need every task's address on the chief")
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


@dataclasses.dataclass
class _Jobs:
    """The jobs of a TF_CONFIG cluster as read: dense lists, sparse {index: address}
    objects, the names of the empty ones, and whether any job was an object."""

    dense: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    sparse: dict[str, dict[int, str]] = dataclasses.field(default_factory=dict)
    empty: dict[str, str] = dataclasses.field(default_factory=dict)  # job -> "list"/"object"
    sparse_form: bool = False

    @property
    def tasks(self) -> dict[str, list[tuple[int, str]]]:
        """Every job with tasks: job -> [(index, address)]."""
        listed = {job: list(enumerate(a)) for job, a in self.dense.items()}
        listed.update((job, sorted(t.items())) for job, t in self.sparse.items())
        return listed

    def task_field(self, job: str, index: int) -> str:
        """How a message names a task's entry: worker[0], or worker["1"] in a sparse job."""
        return f'{job}["{index}"]' if job in self.sparse else f"{job}[{index}]"


def _parse_cluster(raw: Any) -> _Jobs:
    if raw is None:
        return _Jobs()
    if not isinstance(raw, dict):
        raise ConfigError(
            f"TF_CONFIG cluster is {_show(raw)} ({_type_name(raw)}): expected an "
            'object mapping job names to address lists, e.g. {"worker": ["host1:2222"]}')
    jobs = _Jobs()
    for job, addresses in raw.items():
        if isinstance(addresses, dict):
            jobs.sparse_form = True
            if addresses:
                jobs.sparse[job] = _parse_sparse_job(job, addresses)
            else:  # a TFJob with enableDynamicWorker writes "worker": {} for every non-worker
                jobs.empty[job] = "object"
            continue
        if not isinstance(addresses, list):
            raise ConfigError(
                f"TF_CONFIG cluster.{job} is {_show(addresses)} ({_type_name(addresses)}): "
                f'expected a list of "host:port" strings, e.g. "{job}": ["host1:2222"] (or an '
                f'object of them by task index, e.g. "{job}": {{"1": "host1:2222"}})')
        if not addresses:
            # A Kubeflow TFJob writes a replica count of 0 this way: the job is absent.
            jobs.empty[job] = "list"
            continue
        jobs.dense[job] = tuple(
            _check_address(f"cluster.{job}[{i}]", a) for i, a in enumerate(addresses))
    _check_job_sizes(jobs)
    _check_unique_addresses(jobs)
    return jobs


def _parse_sparse_job(job: str, tasks: dict[str, Any]) -> dict[int, str]:
    """A job given as {"<index>": "host:port"} (tf.train.ClusterSpec's sparse job)."""
    parsed: dict[int, str] = {}
    for key, address in tasks.items():
        if not _INDEX_KEY.match(key):
            raise ConfigError(
                f"TF_CONFIG cluster.{job} key {_show(key)} is not a task index: a job given "
                "as an object maps task indices (non-negative integers written as strings, "
                f'e.g. "0", "1") to addresses, e.g. "{job}": {{"1": "host1:2222"}}')
        parsed[int(key)] = _check_address(f'cluster.{job}["{key}"]', address)
    return dict(sorted(parsed.items()))


def _check_job_sizes(jobs: _Jobs) -> None:
    # Both tf.estimator's RunConfig and tf.distribute refuse these for every task.
    # (Several evaluators, or a master beside an evaluator, only stop the
    # evaluator tasks concerned: see _check_evaluator.)
    tasks = jobs.tasks
    for job in (CHIEF, MASTER):
        if len(tasks.get(job, ())) > 1:
            raise ConfigError(
                f"TF_CONFIG cluster.{job} has {len(tasks[job])} tasks "
                f"{[address for _, address in tasks[job]]}: there can be only one {job}")
    if CHIEF in tasks and MASTER in tasks:
        raise ConfigError(
            "TF_CONFIG cluster has both a chief and a master: they are the same "
            "role (master is the TF 1.x name); keep one of them")


def _check_unique_addresses(jobs: _Jobs) -> None:
    seen: dict[str, str] = {}
    for job, tasks in jobs.tasks.items():
        for index, address in tasks:
            task = jobs.task_field(job, index)
            if address in seen:
                raise ConfigError(
                    f"TF_CONFIG cluster.{task} and cluster.{seen[address]} both use "
                    f"{_show(address)}: every task needs its own host:port")
            seen[address] = task


def _check_evaluator(index: int, cluster: Mapping[str, Any]) -> None:
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


def _read_task(raw: Any, job_names: list[str]) -> tuple[str | None, int | None]:
    """This task's (type, index), checked for their own form only."""
    if raw is None or raw == {}:
        if job_names:
            raise ConfigError(
                "TF_CONFIG has a cluster but no task: add "
                '"task": {"type": ..., "index": ...} naming which of the '
                f"cluster's tasks this process is (jobs: {', '.join(job_names)})")
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
    return task_type, index


def _read_dynamic_ps_view(jobs: _Jobs, task_type: str | None, index: int | None) -> None:
    """A ps of a TFJob with enableDynamicWorker sees only itself: `"ps": ["own:2222"]`
    at any index. In such a sparse cluster a one-address ps list of a ps task is
    read as that task's own address, `{index: address}`."""
    if (jobs.sparse_form and task_type == PS and index is not None
            and len(jobs.dense.get(PS, ())) == 1):
        jobs.sparse[PS] = {index: jobs.dense.pop(PS)[0]}


def _check_dynamic_worker_view(jobs: _Jobs, task_type: str, index: int) -> None:
    """Refuses a chief, master or evaluator given the empty view a TFJob with
    enableDynamicWorker gives every task but its workers and ps."""
    tasks = jobs.tasks
    if (not jobs.sparse_form or task_type not in (CHIEF, MASTER, EVALUATOR)
            or CHIEF in tasks or MASTER in tasks):
        return
    shown: dict[str, object] = {
        job: ({} if jobs.empty.get(job) == "object" else []) for job in jobs.empty}
    shown.update((job, "...") for job in tasks)
    task = f"{task_type}:{index}"
    what = (f"lists no chief, so {task} would wait for checkpoints that never come"
            if task_type == EVALUATOR else
            f"gives {task} no address, neither its own nor those of the workers and ps "
            "it must lead")
    raise ConfigError(
        f"TF_CONFIG cluster {_show(shown)} {what}: a Kubeflow TFJob with "
        "enableDynamicWorker: true writes this for every task but its workers and ps "
        "(enableDynamicWorker gives the chief no cluster; each worker sees only itself "
        f"and the ps, each ps only itself). To run this job, {DYNAMIC_WORKER_FIX}")


def _place_task(jobs: _Jobs, task_type: str, index: int) -> None:
    """Checks that the task is one of the cluster's (or an evaluator that can run)."""
    _check_dynamic_worker_view(jobs, task_type, index)
    tasks = jobs.tasks
    if task_type == EVALUATOR:
        _check_evaluator(index, tasks)
        return
    if task_type in jobs.empty:
        given, why = (("an empty list", "a TFJob writes an empty list for a replica "
                       "count of 0") if jobs.empty[task_type] == "list" else
                      ("an empty object", "a TFJob with enableDynamicWorker writes one for "
                       "the jobs a task does not see"))
        raise ConfigError(
            f"TF_CONFIG cluster.{task_type} is {given}, so task {task_type}:{index} "
            f'has no address: list its "host:port" in cluster.{task_type} ({why})')
    if not tasks:
        raise ConfigError(
            f'TF_CONFIG task.type "{task_type}" needs a cluster: add "cluster" '
            f"listing every task's address, e.g. {_EXAMPLE}")
    if task_type not in tasks:
        raise ConfigError(
            f'TF_CONFIG task.type "{task_type}" is not a job in the cluster '
            f"(jobs: {', '.join(tasks)}): add cluster.{task_type} or fix the type")
    if task_type in jobs.sparse:
        listed = jobs.sparse[task_type]
        if index not in listed:
            raise ConfigError(
                f"TF_CONFIG task {task_type}:{index} is not in cluster.{task_type}, which "
                f"lists only {', '.join(f'{task_type}:{i}' for i in listed)} (a job given "
                f'as an object lists tasks by index): add "{index}": "host:port" to '
                f"cluster.{task_type} or fix task.index")
        return
    size = len(jobs.dense[task_type])
    if index >= size:
        plural = "task" if size == 1 else "tasks"
        raise ConfigError(
            f'TF_CONFIG task.index {index} is out of range for "{task_type}" '
            f"(cluster has {size} {task_type} {plural}, indices 0..{size - 1})")


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
    environment, empty_jobs, sparse_jobs) from a decoded TF_CONFIG value, validated."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"TF_CONFIG is {_show(data)} ({_type_name(data)}): expected a JSON "
            f"object such as {_EXAMPLE}")
    jobs = _parse_cluster(data.get("cluster"))
    task_type, task_index = _read_task(data.get("task"), [*jobs.tasks, *jobs.empty])
    if task_type is not None and task_index is not None:
        _read_dynamic_ps_view(jobs, task_type, task_index)
        _place_task(jobs, task_type, task_index)
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
    return dict(cluster=jobs.dense, task_type=task_type, task_index=task_index,
                rpc_layer=rpc_layer, environment=environment,
                empty_jobs=tuple(sorted(jobs.empty)), sparse_jobs=jobs.sparse)
