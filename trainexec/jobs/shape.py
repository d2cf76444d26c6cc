"""`JobShape`: one description of a job's shape, behind launch, render and `launch --from`.

A job is its roles in TF_CONFIG order (chief or master, workers, ps, evaluator),
each with a count, the command its tasks run, the environment they add, and
the restart policy that covers their failures (TFJob's names: ExitCode,
OnFailure, Always, Never). `trainexec launch` builds one from its flags
(`JobShape.from_counts`), `trainexec render` renders one as a TFJob or a Vertex
AI CustomJob, and `trainexec launch --from` reads one from a TFJob manifest
(`trainexec.jobs.manifest`), where a role may have no command (the image's
entrypoint would run) until `-- COMMAND` gives it one (`with_command`).

A shape is plain data, checked by whoever builds it in their own words (flags,
keywords, manifest fields); it only refuses what no builder may produce.

Example:
    ```python
    job = JobShape.from_counts(["python", "train.py"], workers=2, ps=1, evaluator=True)
    job.tasks()          # [("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0), ("evaluator", 0)]
    job.role("worker").count   # 2
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence

from trainexec.task_types import CHIEF, EVALUATOR, MASTER, PS, WORKER

__all__ = ["EXIT_CODE", "ROLE_ORDER", "JobShape", "Role"]

ROLE_ORDER = (CHIEF, MASTER, WORKER, PS, EVALUATOR)
EXIT_CODE = "ExitCode"  # TFJob's restart policy matching trainexec's exit-code contract


@dataclasses.dataclass(frozen=True)
class Role:
    """One role of a job: `count` tasks of `task_type` running `command`.

    `command` is the program and its arguments, or None when none was given
    (a manifest whose image's entrypoint runs); `env` the variables its tasks
    add, in order; `where` names where the role was described, for messages
    (`spec.tfReplicaSpecs.Worker`, `--workers`).
    """

    task_type: str
    count: int = 1
    command: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    restart_policy: str = EXIT_CODE
    where: str = ""

    def __post_init__(self) -> None:
        if self.task_type not in ROLE_ORDER:
            raise ValueError(f"task type {self.task_type!r}: use one of {ROLE_ORDER}")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ValueError(f"{self.task_type} count {self.count!r}: expected an integer >= 0")
        if self.command is not None:
            object.__setattr__(self, "command", tuple(str(arg) for arg in self.command))
        object.__setattr__(self, "env", tuple((str(k), str(v)) for k, v in self.env))

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)


@dataclasses.dataclass(frozen=True)
class JobShape:
    """A job's roles, in TF_CONFIG order, each task type at most once; `name` is the
    job's name where it has one (a TFJob's `metadata.name`)."""

    roles: tuple[Role, ...]
    name: str = ""

    def __post_init__(self) -> None:
        roles = tuple(self.roles)
        types = [role.task_type for role in roles]
        if len(set(types)) != len(types):
            raise ValueError(f"a task type appears twice in {types}")
        if CHIEF in types and MASTER in types:
            raise ValueError("a job has a chief or a master, not both")
        object.__setattr__(self, "roles", tuple(sorted(
            roles, key=lambda role: ROLE_ORDER.index(role.task_type))))

    @classmethod
    def from_counts(cls, command: Sequence[str] | None, *, workers: int = 1, ps: int = 0,
                    evaluator: bool = False, chief: bool = True,
                    env: Mapping[str, str] | Iterable[tuple[str, str]] = (),
                    restart_policy: str = EXIT_CODE, name: str = "") -> "JobShape":
        """The shape `trainexec launch` flags describe: a chief (unless `chief` is
        False), `workers` workers, `ps` parameter servers and an optional evaluator,
        every task running `command` with `env`. Roles with no task are left out."""
        pairs = tuple(env.items()) if isinstance(env, Mapping) else tuple(env)
        counts = ((CHIEF, 1 if chief else 0), (WORKER, workers), (PS, ps),
                  (EVALUATOR, 1 if evaluator else 0))
        command = tuple(command) if command is not None else None
        return cls(tuple(Role(task_type, count, command, pairs, restart_policy)
                         for task_type, count in counts if count), name)

    # -- lookup ------------------------------------------------------------------------
    def role(self, task_type: str) -> Role | None:
        return next((role for role in self.roles if role.task_type == task_type), None)

    def count(self, task_type: str) -> int:
        role = self.role(task_type)
        return role.count if role else 0

    @property
    def leader(self) -> str | None:
        """The task type that leads the job: chief or master; None for workers only."""
        return next((t for t in (CHIEF, MASTER) if self.count(t)), None)

    @property
    def trains(self) -> bool:
        """Whether some task trains (a chief, master or worker)."""
        return any(self.count(t) for t in (CHIEF, MASTER, WORKER))

    @property
    def task_count(self) -> int:
        return sum(role.count for role in self.roles)

    def tasks(self) -> list[tuple[str, int]]:
        """(task type, index) of every task, in TF_CONFIG order."""
        return [(role.task_type, i) for role in self.roles for i in range(role.count)]

    def without_command(self) -> list[Role]:
        """The roles with tasks but no command to run."""
        return [role for role in self.roles if role.count and role.command is None]

    # -- changes -----------------------------------------------------------------------
    def with_command(self, command: Sequence[str]) -> "JobShape":
        """Every role runs `command` instead of its own."""
        return dataclasses.replace(self, roles=tuple(
            dataclasses.replace(role, command=tuple(command)) for role in self.roles))

    def with_restart_policy(self, restart_policy: str) -> "JobShape":
        """Every role restarts by `restart_policy` instead of its own."""
        return dataclasses.replace(self, roles=tuple(
            dataclasses.replace(role, restart_policy=restart_policy) for role in self.roles))
