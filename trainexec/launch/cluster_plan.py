"""`ClusterPlan`: what a `LocalCluster` runs, decided before anything starts.

From a `trainexec.jobs.JobShape`: every task with its command, environment and TF_CONFIG
(`spec.plan_job`), the tasks whose exit decides the job (`wait_for`), the restart groups and
each task's restart policy (`options`), the exit-code contract; its one-line description
and the dry run's task plans (`trainexec launch --dry-run`). The plan holds each
task's `TaskSpec`, nothing that changes: `LocalCluster` makes its runtime `Task`s from
them, and starts, stops and supervises those.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import types
from typing import Any, Mapping, Sequence

from trainexec.cluster.config import EVALUATOR, TF_CONFIG
from trainexec.contract.exit_codes import ExitCodes
from trainexec.errors import ConfigError
from trainexec.jobs.shape import JobShape
from trainexec.launch.gpus import GpuPlan
from trainexec.launch.options import (expand_restart_groups, expand_restart_policy,
                                      expand_wait_for)
from trainexec.launch.spec import LAUNCH, plan_job
from trainexec.launch.task import Task, TaskSpec

__all__ = ["ClusterPlan", "check_job_runs"]


def check_job_runs(job: JobShape) -> None:
    """Raises ConfigError when `job` cannot run here: no training task, or a role with
    tasks but no command (named by its `where`)."""
    if not job.trains:
        raise ConfigError(f"job {job.name or '(unnamed)'} has no training task: give it a "
                          "chief, a master or a worker")
    missing = job.without_command()
    if missing:
        raise ConfigError(f"{', '.join(r.where or r.task_type for r in missing)}: no "
                          "command to run: give the role a command")


@dataclasses.dataclass(frozen=True)
class ClusterPlan:
    """A job's tasks and the rules that run them (see the module doc).

    Attributes:
      job: the job's shape.
      tf_config_shape: how TF_CONFIG is written (`trainexec.launch.spec`).
      command: the first role's command (a task with none of its own runs it).
      env: added to os.environ for every task.
      tasks: every task's spec, in order: chief, workers, ps, evaluator.
      cluster_spec: the cluster every task's TF_CONFIG holds.
      primary: the task names that must exit 0 for the job to succeed.
      restart_groups: groups of task names restarted together.
      restart_policies: each task's restart policy.
      exit_codes: the exit-code contract the tasks run under.
      gpus: each task's GPUs (`trainexec.launch.gpus`: CUDA_VISIBLE_DEVICES).
    """

    job: JobShape
    tf_config_shape: str
    command: list[str]
    env: dict[str, str]
    tasks: tuple[TaskSpec, ...]
    cluster_spec: dict[str, list[str]]
    primary: tuple[str, ...]
    restart_groups: tuple[tuple[str, ...], ...]
    restart_policies: Mapping[str, str]
    exit_codes: ExitCodes
    gpus: GpuPlan = GpuPlan({}, {})

    @classmethod
    def build(cls, job: JobShape, tf_config: str, *, host: str,
              env: Mapping[str, str] | None, wait_for: Sequence[str],
              restart_groups: Sequence[Sequence[str] | str],
              restart_policy: str | Mapping[str, str],
              gpus: GpuPlan = GpuPlan({}, {})) -> "ClusterPlan":
        """Plans `job` on `host` (validating it: ConfigError naming what is wrong)."""
        first = next(role for role in job.roles if role.count)
        env = {str(k): str(v) for k, v in (env or {}).items()}
        spec, tasks = plan_job(job, host, tf_config)  # validates
        return cls(
            job=job, tf_config_shape=tf_config,
            command=[str(arg) for arg in first.command or ()], env=env, tasks=tuple(tasks),
            cluster_spec=spec, primary=tuple(expand_wait_for(wait_for, tasks)),
            restart_groups=tuple(expand_restart_groups(restart_groups,
                                                       [t.name for t in tasks])),
            restart_policies=types.MappingProxyType(
                expand_restart_policy(restart_policy, tasks)),
            exit_codes=ExitCodes.from_env({**os.environ, **env}), gpus=gpus)

    @property
    def evaluator(self) -> bool:
        """Whether the job has an evaluator."""
        return self.job.count(EVALUATOR) > 0

    def command_of(self, task: TaskSpec | Task) -> list[str]:
        """What `task` runs: its role's command, else the first role's."""
        return list(task.command) or list(self.command)

    def added_env(self, task: TaskSpec | Task) -> dict[str, str]:
        """What `task` adds to the launcher's environment, its TF_CONFIG included (its
        role's own env over its GPUs over the cluster's env)."""
        env = {**self.env, **self.gpus.env.get(task.name, {}), **task.env}
        if task.tf_config is not None:
            env[TF_CONFIG] = task.tf_config
        return env

    def describe(self) -> str:
        """One line: the cluster spec, the evaluator if outside it, and the command
        (each job's, when they differ)."""
        extra = (" + evaluator:0 (outside the cluster)"
                 if self.evaluator and self.tf_config_shape == LAUNCH else "")
        commands: dict[str, str] = {}
        for task in self.tasks:
            commands.setdefault(task.task_type, subprocess.list2cmdline(self.command_of(task)))
        if len(set(commands.values())) == 1:
            text = f"command: {next(iter(commands.values()))}"
        else:
            text = "commands: " + "; ".join(f"{job}: {cmd}" for job, cmd in commands.items())
        return f"cluster {json.dumps(self.cluster_spec)}{extra}; {text}"

    def task_plans(self) -> list[dict[str, Any]]:
        """`{"task": "worker:0", "command": [...], "env": {...}}` per task, `env` being
        what the task adds to this process's environment (`added_env`)."""
        return [{"task": task.name, "command": self.command_of(task),
                 "env": self.added_env(task)} for task in self.tasks]
