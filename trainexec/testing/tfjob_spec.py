"""The parts of a TFJob the test bed's operator acts on, and its pure decisions.

`TFJobSpec` names the job, its replicas (`Replicas`: how many, and the
`restartPolicy`), the pods' command and environment, and its success policy;
`tf_config_for` is the TF_CONFIG Kubeflow's operator writes for one pod;
`exit_code_of` the exit code a container reports; `log_line` how a pod's line is
prefixed. `trainexec.testing.kubelet.TFJobRun` runs such a job on a bed (and
re-exports these names).

Example:
    ```python
    job = TFJobSpec("demo", {"Chief": Replicas(1), "Worker": Replicas(2)},
                    command=[sys.executable, "-m", "trainexec.examples.keras_job"])
    tf_config_for(job, "worker", 1)  # '{"cluster": {"chief": [...], ...}, ...}'
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from trainexec.jobs.tf_config import tfjob_tf_config

__all__ = ["REPLICA_TYPES", "RESTART_POLICIES", "Replicas", "TFJobSpec", "exit_code_of",
           "log_line", "tf_config_for"]

# TFJob's replica types, in the order its cluster lists them here.
REPLICA_TYPES = ("Chief", "Master", "Worker", "PS", "Evaluator")
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")


@dataclasses.dataclass(frozen=True)
class Replicas:
    """One replica spec: how many, and its `restartPolicy`."""

    count: int = 1
    restart_policy: str = "ExitCode"

    def __post_init__(self) -> None:
        if self.restart_policy not in RESTART_POLICIES:
            raise ValueError(f"restartPolicy {self.restart_policy!r}: use one of "
                             f"{', '.join(RESTART_POLICIES)}")


@dataclasses.dataclass(frozen=True)
class TFJobSpec:
    """The parts of a TFJob the operator acts on."""

    name: str
    replicas: Mapping[str, Replicas]
    command: Sequence[str]
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    namespace: str = "default"
    port: int = 2222
    success_policy: str = ""  # "" (the chief) or "AllWorkers"

    def __post_init__(self) -> None:
        unknown = set(self.replicas) - set(REPLICA_TYPES)
        if unknown:
            raise ValueError(f"replica types {sorted(unknown)}: use {REPLICA_TYPES}")

    @property
    def domain(self) -> str:
        return f"{self.namespace}.svc"

    def pods(self) -> list[tuple[str, int]]:
        """(lowercased type, index) of every pod, in the operator's order."""
        return [(rtype.lower(), i) for rtype in REPLICA_TYPES
                for i in range(self.replicas.get(rtype, Replicas(0)).count)]

    def pod_name(self, task_type: str, index: int) -> str:
        return f"{self.name}-{task_type}-{index}"

    def hosts(self) -> list[str]:
        """The bed's hosts: one per pod, named as its pod."""
        return [self.pod_name(t, i) for t, i in self.pods()]

    def restart_policy(self, task_type: str) -> str:
        rtype = next(r for r in REPLICA_TYPES if r.lower() == task_type)
        return self.replicas[rtype].restart_policy


def log_line(task: str, line: str) -> str:
    """A pod's line prefixed `[task] ` once: trainexec's own lines carry it already."""
    return line if line.startswith(f"[{task}] ") else f"[{task}] {line}"


def tf_config_for(job: TFJobSpec, task_type: str, index: int) -> str:
    """The TF_CONFIG the operator writes for one pod (`trainexec.jobs.tf_config`)."""
    cluster = {rtype.lower(): [f"{job.pod_name(rtype.lower(), i)}.{job.domain}:{job.port}"
                               for i in range(job.replicas[rtype].count)]
               for rtype in REPLICA_TYPES if rtype in job.replicas}
    return tfjob_tf_config(cluster, task_type, index)


def exit_code_of(returncode: int) -> int:
    """A container's exit code: 128 + the signal for a program killed by one."""
    return 128 - returncode if returncode < 0 else returncode
