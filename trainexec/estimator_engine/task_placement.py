"""Where this task stands in its cluster, read from TF_CONFIG by tf.estimator's rules.

`place_task` takes a decoded TF_CONFIG and returns a frozen `TaskPlacement`: the cluster,
this task's type and index, its session targets (`master`, `evaluation_master`), whether
it is the chief, how many ps and workers train, its global id, and TF_CONFIG's `service`.
`RunConfig` answers from it, so it answers as `tf.estimator.RunConfig` does for the same
TF_CONFIG:

* no `cluster`: one machine. `task`, if given, may only say worker 0; the targets are
  TF_CONFIG's `session_master` and `eval_session_master` (default "", in-process);
* a `cluster`: it has one `chief` (or, the TF 1.x form, one `master`, and then neither a
  chief nor an evaluator task), and `task` names one of its tasks. The master is
  `grpc://` and this task's address, "" for a cluster of one task, or TF_CONFIG's
  `session_master`; the workers are `worker` and the chief (or master) together. With
  `workers_may_lead` (a RunConfig with a cluster strategy or an `eval_distribute`), a cluster of
  workers alone is taken too, worker 0 its chief;
* an `evaluator` task stands outside training: no cluster, master "", not the chief, no
  replicas and no global id; its target is TF_CONFIG's `eval_session_master`.

Addresses are only names here and are not checked (a cluster spec that only names the
tasks may use port 0): trainexec checks them where it starts servers, in
`train_and_evaluate` (`trainexec.cluster`). A refusal is a `ConfigError` (a ValueError)
starting with tf.estimator's words for the same rule, then the value and the fix; a
`service` that is not an object is a TypeError, as in tf.estimator.

Example:
    ```python
    place_task({"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222"]},
                "task": {"type": "worker", "index": 0}}).master     # 'grpc://h1:2222'
    ```
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any, Mapping

from trainexec.cluster.config import TF_CONFIG, ClusterConfig
from trainexec.cluster.parsing import decode
from trainexec.errors import ConfigError
from trainexec.task_types import CHIEF, EVALUATOR, MASTER, PS, WORKER

__all__ = ["TaskPlacement", "place_task", "read_tf_config"]

_LOCAL = ""  # the in-process session target
_INTEGER = re.compile(r"^-?[0-9]+$")  # an index as tf.estimator reads it: int(text)
_INDEX_KEY = re.compile(r"^[0-9]+$")
_ONE_MACHINE = ('leave "task" out (or give {"type": "worker", "index": 0}) to run on one '
                'machine, or add "cluster" listing every task\'s "host:port"')

# A job: an address list (position = index), or {index: address} for a sparse job.
_Tasks = Any


@dataclasses.dataclass(frozen=True)
class TaskPlacement:
    """This task's place in its cluster, as tf.estimator's RunConfig reads TF_CONFIG.

    Attributes:
      cluster: job -> addresses (a tuple, or {index: address} for a job given as an
        object); empty on one machine and for an evaluator.
      task_type, task_id: this task ("worker", 0 on one machine).
      master: this task's session target ("grpc://host:port", or "" in-process).
      evaluation_master: an evaluator's session target ("" unless TF_CONFIG says).
      is_chief: the chief or master (True on one machine, False for an evaluator).
      num_ps_replicas, num_worker_replicas: ps tasks; workers with the chief or master.
      global_id_in_cluster: this task's number among all the cluster's tasks (chief
        first, ps last); None for an evaluator.
      service: TF_CONFIG's `service` object, or None.
    """

    cluster: Mapping[str, _Tasks] = dataclasses.field(default_factory=dict)
    task_type: str = WORKER
    task_id: int = 0
    master: str = _LOCAL
    evaluation_master: str = _LOCAL
    is_chief: bool = True
    num_ps_replicas: int = 0
    num_worker_replicas: int = 1
    global_id_in_cluster: int | None = 0
    service: Mapping[str, Any] | None = None


def _show(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 160 else text[:157] + "..."


def read_tf_config(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """TF_CONFIG from `environ` (default `os.environ`), decoded; without it, the cluster
    of a Slurm job step that `TRAINEXEC_SLURM_ROLES` describes, else {} (one machine)."""
    environ = os.environ if environ is None else environ
    text = environ.get(TF_CONFIG, "")
    if not text.strip():
        return ClusterConfig.from_env(environ).to_dict()
    data = decode(text)
    if not isinstance(data, dict):
        raise ConfigError(
            f"TF_CONFIG is {_show(data)}: expected a JSON object such as "
            '{"cluster": {"chief": ["host0:2222"]}, "task": {"type": "chief", "index": 0}}')
    return data


def _size(tasks: _Tasks) -> int:
    """A job's number of task slots: its length; for {index: address}, the highest
    index + 1 (as `tf.train.ClusterSpec.job_tasks` counts it)."""
    if isinstance(tasks, dict):
        return max(tasks) + 1 if tasks else 0
    return len(tasks)


def _read_jobs(raw: Any) -> dict[str, _Tasks]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f"TF_CONFIG cluster is {_show(raw)}: expected an object of jobs, each a list "
            'of "host:port" addresses, e.g. {"chief": ["host0:2222"], "worker": '
            '["host1:2222"]}')
    jobs: dict[str, _Tasks] = {}
    for job, tasks in raw.items():
        if isinstance(tasks, dict):
            keys = [k for k in tasks if not _INDEX_KEY.match(str(k))]
            if keys:
                raise ConfigError(
                    f"TF_CONFIG cluster.{job} key {_show(keys[0])} is not a task index: a "
                    "job given as an object maps indices to addresses, e.g. "
                    f'"{job}": {{"1": "host1:2222"}}')
            entries = dict(sorted((int(k), a) for k, a in tasks.items()))
        elif isinstance(tasks, (list, tuple)):
            entries = dict(enumerate(tasks))
        else:
            raise ConfigError(
                f"TF_CONFIG cluster.{job} is {_show(tasks)}: expected a list of "
                f'"host:port" addresses, e.g. "{job}": ["host1:2222"]')
        for index, address in entries.items():
            if not isinstance(address, str):
                raise ConfigError(
                    f"TF_CONFIG cluster.{job}[{index}] is {_show(address)}: expected a "
                    '"host:port" string such as "host1:2222"')
        jobs[job] = entries if isinstance(tasks, dict) else tuple(tasks)
    return jobs


def _read_index(value: Any) -> int:
    if isinstance(value, bool) or not (isinstance(value, int) or (
            isinstance(value, str) and _INTEGER.match(value))):
        raise ConfigError(
            f"TF_CONFIG task.index is {_show(value)}: expected a non-negative integer, "
            "this task's position in its job (0 for the first)")
    return int(value)


def _service(value: Any) -> Mapping[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise TypeError(
            f'If "service" is set in TF_CONFIG, it must be a dict. Given {type(value)}: '
            f'TF_CONFIG "service" is {_show(value)}; give an object of the platform\'s '
            'settings (e.g. {"name": "..."}) or leave "service" out')
    return value


def _target(tf_config: Mapping[str, Any], key: str) -> str:
    value = tf_config.get(key, _LOCAL)
    if not isinstance(value, str):
        raise ConfigError(
            f"TF_CONFIG {key} is {_show(value)}: expected a session target string such as "
            '"grpc://host0:2222" (or leave it out)')
    return value


def _one_machine(task: Mapping[str, Any], tf_config: Mapping[str, Any],
                 service: Mapping[str, Any] | None) -> TaskPlacement:
    task_type = task.get("type", WORKER)
    task_id = _read_index(task.get("index", 0))
    if task_type != WORKER:
        raise ConfigError(
            'If "cluster" is not set in TF_CONFIG, task type must be WORKER. TF_CONFIG '
            f"task.type is {_show(task_type)} and there is no cluster: {_ONE_MACHINE}")
    if task_id != 0:
        raise ConfigError(
            'If "cluster" is not set in TF_CONFIG, task index must be 0. TF_CONFIG '
            f"task.index is {task_id} and there is no cluster: {_ONE_MACHINE}")
    return TaskPlacement(master=_target(tf_config, "session_master"),
                         evaluation_master=_target(tf_config, "eval_session_master"),
                         service=service)


def _check_lead(jobs: Mapping[str, _Tasks], lead: str) -> None:
    """The cluster has one chief (or master, `lead`)."""
    if lead == MASTER and CHIEF in jobs:
        raise ConfigError(
            "If `master` node exists in `cluster`, job `chief` is not supported. TF_CONFIG "
            "cluster lists both, and they are the same role (master is its TF 1.x name): "
            "keep one of them")
    if _size(jobs.get(lead, ())) == 0:
        raise ConfigError(
            f'If "cluster" is set in TF_CONFIG, it must have one "{lead}" node. TF_CONFIG '
            f"cluster has jobs {', '.join(jobs)} and no {lead} to save checkpoints: add "
            f'"{lead}": ["host:port"]; a cluster of workers only trains with Keras '
            "(trainexec.KerasTrainer, MultiWorkerMirroredStrategy), not an Estimator")
    if len(jobs[lead]) > 1:
        listed = list(jobs[lead].values() if isinstance(jobs[lead], dict) else jobs[lead])
        raise ConfigError(
            f'The "cluster" in TF_CONFIG must have only one "{lead}" node. cluster.{lead} '
            f"lists {len(listed)}: {_show(listed)}; keep one {lead} and make the others "
            'workers ("worker": [...])')


def _check_task(jobs: Mapping[str, _Tasks], task: Mapping[str, Any],
                lead: str) -> tuple[str, int]:
    """This task's (type, index), one of the cluster's tasks or an evaluator."""
    task_type = task.get("type")
    if not task_type:
        raise ConfigError(
            'If "cluster" is set in TF_CONFIG, task type must be set. TF_CONFIG task is '
            f"{_show(dict(task))}: add \"type\", this process's job ({', '.join(jobs)}, or "
            '"evaluator"), e.g. "task": {"type": "worker", "index": 0}')
    if not isinstance(task_type, str):
        raise ConfigError(
            f"TF_CONFIG task.type is {_show(task_type)}: expected a job name (a string), "
            f"one of {', '.join(jobs)} or \"evaluator\"")
    if task.get("index") is None:
        raise ConfigError(
            'If "cluster" is set in TF_CONFIG, task index must be set. TF_CONFIG task is '
            f'{_show(dict(task))}: add "index", this task\'s 0-based position in '
            f"cluster.{task_type}")
    task_id = _read_index(task["index"])
    if task_id < 0:
        raise ConfigError(
            f"Task index must be non-negative number. TF_CONFIG task.index is {task_id}: "
            f"give this task's 0-based position in cluster.{task_type}")
    if task_type == EVALUATOR:
        return task_type, task_id
    if task_type not in jobs:
        raise ConfigError(
            f"{task_type} is not a valid task_type in the cluster_spec: TF_CONFIG cluster "
            f"has jobs {', '.join(jobs)}. Fix task.type (a job of the cluster, or "
            f'"evaluator"), or list this task\'s address in cluster.{task_type}')
    tasks = jobs[task_type]
    if task_id not in (tasks if isinstance(tasks, dict) else range(len(tasks))):
        listed = (f"lists indices {', '.join(map(str, tasks))}" if isinstance(tasks, dict)
                  else f"has {len(tasks)} task{'s' * (len(tasks) != 1)}")
        raise ConfigError(
            f"{task_id} is not a valid task_id for task_type {task_type} in the "
            f"cluster_spec: TF_CONFIG task.index {task_id} is out of range, cluster."
            f"{task_type} {listed}. Fix task.index, or list this task's address in "
            f"cluster.{task_type}")
    return task_type, task_id


def _global_id(jobs: Mapping[str, _Tasks], task_type: str, task_id: int, lead: str) -> int:
    """The chief (or master) first, the other jobs in name order, the ps last."""
    order = [lead, *sorted(j for j in jobs if j not in (lead, PS)), *([PS] if PS in jobs else [])]
    number = 0
    for job in order:
        if job == task_type:
            return number + task_id
        number += _size(jobs[job])
    raise AssertionError(f"{task_type} is not a job of {list(jobs)}")  # checked before


def _master(jobs: Mapping[str, _Tasks], task_type: str, task_id: int,
            tf_config: Mapping[str, Any]) -> str:
    if "session_master" in tf_config:
        return _target(tf_config, "session_master")
    if len(jobs) == 1 and _size(next(iter(jobs.values()))) == 1:
        return _LOCAL  # a cluster of one task needs no server
    return "grpc://" + jobs[task_type][task_id]


def place_task(tf_config: Mapping[str, Any], workers_may_lead: bool = False) -> TaskPlacement:
    """This task's `TaskPlacement` from a decoded TF_CONFIG (module doc).
    `workers_may_lead`: a cluster of workers without a chief is taken, worker 0 leading
    it (a `train_distribute` strategy's cluster, as tf.estimator took it)."""
    service = _service(tf_config.get("service"))
    jobs = _read_jobs(tf_config.get("cluster"))
    task = tf_config.get("task") or {}
    if not isinstance(task, dict):
        raise ConfigError(f"TF_CONFIG task is {_show(task)}: expected an object such as "
                          '{"type": "worker", "index": 0}')
    if not jobs:
        return _one_machine(task, tf_config, service)
    lead = MASTER if MASTER in jobs else CHIEF
    if workers_may_lead and lead not in jobs and _size(jobs.get(WORKER, ())) > 0:
        lead = WORKER  # worker 0 leads, as tf.estimator's distribute coordinator had it
    else:
        _check_lead(jobs, lead)
    task_type, task_id = _check_task(jobs, task, lead)
    if task_type == EVALUATOR:
        if lead == MASTER:
            raise ConfigError(
                "If `master` node exists in `cluster`, task_type `evaluator` is not "
                f"supported. evaluator:{task_id} cannot run beside cluster.master (the "
                "master evaluates after its own checkpoint saves): rename cluster.master to "
                "cluster.chief to keep this evaluator, or leave the evaluator task out")
        return TaskPlacement(task_type=task_type, task_id=task_id, is_chief=False,
                             evaluation_master=_target(tf_config, "eval_session_master"),
                             num_worker_replicas=0, global_id_in_cluster=None,
                             service=service)
    leads = task_type == lead and (lead != WORKER or task_id == 0)
    return TaskPlacement(
        cluster=jobs, task_type=task_type, task_id=task_id,
        master=_master(jobs, task_type, task_id, tf_config), is_chief=leads,
        num_ps_replicas=len(jobs.get(PS, ())),
        num_worker_replicas=len(jobs.get(WORKER, ())) + (
            len(jobs[lead]) if lead != WORKER else 0),
        global_id_in_cluster=_global_id(jobs, task_type, task_id, lead), service=service)
