"""A Slurm job step -> `ClusterConfig`: the cluster of a program started by `srun`.

Opt-in: only when `TRAINEXEC_SLURM_ROLES` is set (and TF_CONFIG is not) does
`ClusterConfig.from_env` read the step; without it nothing Slurm-related
happens. The variable gives the roles' task counts, e.g.
`chief=1,worker=2,ps=1,evaluator=1`; ranks are given roles in trainexec's
order, whatever the order written: chief first, then workers, ps, evaluator
(rank 0 is the chief, ranks 1-2 the workers, 3 the ps, 4 the evaluator).

From the step's environment:

* `SLURM_PROCID`: this task's rank; `SLURM_STEP_NUM_TASKS`: the step's tasks
  (must equal the roles' total);
* `SLURM_STEP_NODELIST` in Slurm's own order (`n[9-11]` is n9, n10, n11:
  never sorted as text; `a[01-03,7],b5` is a01 a02 a03 a7 b5) and
  `SLURM_STEP_TASKS_PER_NODE` (`2(x3),1`: 2 tasks on each of the first
  three nodes, 1 on the fourth) place rank r under block distribution:
  the first node's tasks, then the next node's;
* ports: `SLURM_STEP_RESV_PORTS` when Slurm reserved ports for the step
  (`MpiParams=ports=...` or `srun --resv-ports`): the local task's port;
  otherwise `TRAINEXEC_SLURM_PORT` (default 2222) plus `SLURM_LOCALID`.

The guess is checked: this task's node must be `SLURMD_NODENAME` and its
slot `SLURM_LOCALID`; with another distribution (`cyclic`, `plane`, an
arbitrary one) they differ, and a `ConfigError` (exit 2) names both and the
fix, `--distribution=block`. Addresses are node names (`n10:21001`): the
names Slurm gives its nodes must resolve on every node.

Example:
    ```python
    step = SlurmStep.from_env()          # None without TRAINEXEC_SLURM_ROLES
    data = step.tf_config()              # this task's TF_CONFIG, checked against the step
    config = ClusterConfig.from_env()    # the same, with TRAINEXEC_SLURM_ROLES set
    ```
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from typing import Any, Mapping

from trainexec.contract.slurm_env import ROLES_ENV
from trainexec.errors import ConfigError
from trainexec.task_types import CHIEF, EVALUATOR, PS, WORKER

__all__ = ["DEFAULT_PORT", "PORT_ENV", "ROLES_ENV", "ROLE_ORDER", "SlurmStep",
           "expand_hostlist", "expand_ports", "expand_tasks_per_node", "parse_roles",
           "slurm_roles_set"]

PORT_ENV = "TRAINEXEC_SLURM_PORT"
DEFAULT_PORT = 2222
ROLE_ORDER = (CHIEF, WORKER, PS, EVALUATOR)
_AT_MOST_ONE = (CHIEF, EVALUATOR)
_BLOCK_FIX = ("run the step with block distribution: srun --distribution=block "
              "(or #SBATCH --distribution=block; `trainexec render sbatch` writes it)")
_ROLES_EXAMPLE = "chief=1,worker=2,ps=1,evaluator=1"


def slurm_roles_set(environ: Mapping[str, str]) -> bool:
    """Whether the Slurm producer is opted into (TRAINEXEC_SLURM_ROLES non-empty)."""
    return bool(environ.get(ROLES_ENV, "").strip())


def parse_roles(text: str) -> tuple[tuple[str, int], ...]:
    """`chief=1,worker=2` -> (("chief", 1), ("worker", 2)), in `ROLE_ORDER`,
    roles with 0 tasks left out."""
    counts: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        role, sep, count = item.partition("=")
        role = role.strip().lower()
        if not sep or role not in ROLE_ORDER:
            raise ConfigError(
                f"{ROLES_ENV} entry {item!r} is not ROLE=COUNT with ROLE one of "
                f"{', '.join(ROLE_ORDER)}: write e.g. {ROLES_ENV}={_ROLES_EXAMPLE}")
        if role in counts:
            raise ConfigError(f"{ROLES_ENV} names {role!r} twice ({text!r}): give each "
                              "role once")
        if not count.strip().isdigit():
            raise ConfigError(f"{ROLES_ENV} {role}={count.strip()!r} is not a task count: "
                              f"write a whole number, e.g. {role}=1")
        counts[role] = int(count)
        if role in _AT_MOST_ONE and counts[role] > 1:
            raise ConfigError(f"{ROLES_ENV} {role}={counts[role]}: a cluster has at most "
                              f"one {role}; write {role}=1")
    roles = tuple((role, counts[role]) for role in ROLE_ORDER if counts.get(role))
    if not any(role in (CHIEF, WORKER) for role, _ in roles):
        raise ConfigError(f"{ROLES_ENV}={text!r} has no chief or worker, so nothing "
                          f"trains: write e.g. {ROLES_ENV}={_ROLES_EXAMPLE}")
    return roles


_HOST_ITEM = re.compile(r"([^,\[]*(?:\[[^\]]*\][^,\[]*)*)(?:,|$)")


def expand_hostlist(text: str, field: str = "SLURM_STEP_NODELIST") -> tuple[str, ...]:
    """A Slurm host list in Slurm's order: `n[9-11]` -> n9, n10, n11;
    `a[01-03,7],b5` -> a01, a02, a03, a7, b5 (zero padding kept)."""
    hosts: list[str] = []
    text = text.strip()
    pos = 0
    while pos < len(text):
        match = _HOST_ITEM.match(text, pos)
        item = match.group(1) if match else ""
        if not item or not match:
            raise ConfigError(f"{field} {text!r} is not a Slurm host list (e.g. "
                              "n[9-11] or a[01-03,7],b5)")
        hosts.extend(_expand_item(item, field, text))
        pos = match.end()
    if not hosts:
        raise ConfigError(f"{field} is empty: run the program as a task of a Slurm step "
                          "(srun)")
    return tuple(hosts)


def _expand_item(item: str, field: str, whole: str) -> list[str]:
    parts = re.split(r"\[([^\]]*)\]", item)  # literal, ranges, literal, ranges, ...
    choices: list[list[str]] = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            choices.append([part])
            continue
        values: list[str] = []
        for piece in part.split(","):
            lo, dash, hi = piece.strip().partition("-")
            if not lo.isdigit() or (dash and not hi.isdigit()):
                raise ConfigError(f"{field} {whole!r}: [{part}] is not a list of numbers "
                                  "and ranges (e.g. [01-03,7])")
            if dash and int(hi) < int(lo):
                raise ConfigError(f"{field} {whole!r}: range {piece} runs backwards")
            width = len(lo)
            values.extend(str(n).zfill(width)
                          for n in range(int(lo), int(hi if dash else lo) + 1))
        choices.append(values)
    if any("[" in c or "]" in c for c in itertools.chain(*choices)):
        raise ConfigError(f"{field} {whole!r}: unbalanced brackets in {item!r}")
    return ["".join(combo) for combo in itertools.product(*choices)]


def expand_tasks_per_node(text: str, field: str = "SLURM_STEP_TASKS_PER_NODE"
                          ) -> tuple[int, ...]:
    """`2(x3),1` -> (2, 2, 2, 1)."""
    counts: list[int] = []
    for item in text.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", item)
        if not match:
            raise ConfigError(f"{field} {text!r} is not Slurm's tasks-per-node form "
                              "(e.g. 2(x3),1)")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return tuple(counts)


def expand_ports(text: str, field: str = "SLURM_STEP_RESV_PORTS") -> tuple[int, ...]:
    """`21001-21003,21010` -> (21001, 21002, 21003, 21010)."""
    ports: list[int] = []
    for item in text.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", item)
        if not match:
            raise ConfigError(f"{field} {text!r} is not a port list (e.g. 21001-21003)")
        lo, hi = int(match.group(1)), int(match.group(2) or match.group(1))
        ports.extend(range(lo, hi + 1))
    return tuple(ports)


def _int(environ: Mapping[str, str], name: str, fix: str) -> int:
    value = environ.get(name)
    if value is None or not value.strip():
        raise ConfigError(f"{ROLES_ENV} is set but {name} is not: {fix}")
    if not value.strip().isdigit():
        raise ConfigError(f"{name} {value!r} is not a whole number: {fix}")
    return int(value)


_UNDER_SRUN = ("run the program as the tasks of one job step (srun ... inside sbatch), "
               f"or unset {ROLES_ENV} outside Slurm")


@dataclasses.dataclass(frozen=True)
class SlurmStep:
    """What a task of a Slurm step is told, parsed once; `cluster_config()` places it.

    Attributes:
      roles: (role, count) in `ROLE_ORDER`.
      rank: SLURM_PROCID.
      local_id: SLURM_LOCALID, this task's slot on its node.
      node: SLURMD_NODENAME, the node this task runs on.
      nodes: SLURM_STEP_NODELIST expanded, in Slurm's order.
      tasks_per_node: SLURM_STEP_TASKS_PER_NODE expanded, one count per node.
      reserved_ports: SLURM_STEP_RESV_PORTS expanded, () when none reserved.
      base_port: TRAINEXEC_SLURM_PORT (default 2222), used without reserved ports.
      distribution: SLURM_DISTRIBUTION as srun set it ("" when absent), for messages.
    """

    roles: tuple[tuple[str, int], ...]
    rank: int
    local_id: int
    node: str
    nodes: tuple[str, ...]
    tasks_per_node: tuple[int, ...]
    reserved_ports: tuple[int, ...] = ()
    base_port: int = DEFAULT_PORT
    distribution: str = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "SlurmStep | None":
        """The step `environ` (default `os.environ`) describes; None when
        TRAINEXEC_SLURM_ROLES is not set."""
        environ = os.environ if environ is None else environ
        if not slurm_roles_set(environ):
            return None
        roles = parse_roles(environ[ROLES_ENV])
        for name in ("SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "SLURMD_NODENAME"):
            if not environ.get(name, "").strip():
                raise ConfigError(f"{ROLES_ENV} is set but {name} is not: {_UNDER_SRUN}")
        nodes = expand_hostlist(environ["SLURM_STEP_NODELIST"])
        per_node = expand_tasks_per_node(environ["SLURM_STEP_TASKS_PER_NODE"])
        if len(per_node) != len(nodes):
            raise ConfigError(
                f"SLURM_STEP_TASKS_PER_NODE {environ['SLURM_STEP_TASKS_PER_NODE']!r} counts "
                f"{len(per_node)} nodes but SLURM_STEP_NODELIST "
                f"{environ['SLURM_STEP_NODELIST']!r} names {len(nodes)}: both must describe "
                "the same step")
        total = sum(count for _, count in roles)
        step_tasks = environ.get("SLURM_STEP_NUM_TASKS") or environ.get("SLURM_NTASKS")
        if step_tasks and step_tasks.strip().isdigit() and int(step_tasks) != total:
            raise ConfigError(
                f"{ROLES_ENV}={environ[ROLES_ENV]!r} has {total} tasks but the step has "
                f"{step_tasks} (SLURM_STEP_NUM_TASKS): run srun with --ntasks={total}, "
                f"or change {ROLES_ENV}")
        if sum(per_node) != total:
            raise ConfigError(
                f"{ROLES_ENV}={environ[ROLES_ENV]!r} has {total} tasks but "
                f"SLURM_STEP_TASKS_PER_NODE {environ['SLURM_STEP_TASKS_PER_NODE']!r} places "
                f"{sum(per_node)}: run srun with --ntasks={total}, or change {ROLES_ENV}")
        reserved = environ.get("SLURM_STEP_RESV_PORTS", "").strip()
        port_text = environ.get(PORT_ENV, "").strip() or str(DEFAULT_PORT)
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535 - max(per_node):
            raise ConfigError(f"{PORT_ENV} {port_text!r} is not a port: write a number "
                              "between 1024 and 65000, e.g. 2222")
        return cls(roles=roles,
                   rank=_int(environ, "SLURM_PROCID", _UNDER_SRUN),
                   local_id=_int(environ, "SLURM_LOCALID", _UNDER_SRUN),
                   node=environ["SLURMD_NODENAME"].strip(), nodes=nodes,
                   tasks_per_node=per_node,
                   reserved_ports=expand_ports(reserved) if reserved else (),
                   base_port=int(port_text),
                   distribution=environ.get("SLURM_DISTRIBUTION", "").strip())

    # -- placement (pure) --------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return sum(self.tasks_per_node)

    def placement(self) -> tuple[tuple[str, int], ...]:
        """(node, local id) of every rank under block distribution."""
        return tuple((node, local) for node, count in zip(self.nodes, self.tasks_per_node)
                     for local in range(count))

    def role_of(self, rank: int) -> tuple[str, int]:
        """(role, index) of `rank`: roles in `ROLE_ORDER`, ranks in turn."""
        start = 0
        for role, count in self.roles:
            if rank < start + count:
                return role, rank - start
            start += count
        raise ConfigError(f"SLURM_PROCID {rank} is beyond the {start} tasks of "
                          f"{ROLES_ENV}: run srun with --ntasks={start}")

    def port(self, local_id: int) -> int:
        if self.reserved_ports:
            if local_id >= len(self.reserved_ports):
                raise ConfigError(
                    f"SLURM_STEP_RESV_PORTS reserves {len(self.reserved_ports)} ports per "
                    f"node but a node runs {max(self.tasks_per_node)} tasks: reserve more "
                    f"(srun --resv-ports={max(self.tasks_per_node)}) or ask the site to "
                    "widen MpiParams=ports")
            return self.reserved_ports[local_id]
        return self.base_port + local_id

    def check(self) -> None:
        """ConfigError unless block placement puts this task where Slurm did."""
        if self.rank >= self.num_tasks:
            raise ConfigError(f"SLURM_PROCID {self.rank} is beyond the step's "
                              f"{self.num_tasks} tasks (SLURM_STEP_TASKS_PER_NODE)")
        node, local = self.placement()[self.rank]
        if (node, local) != (self.node, self.local_id):
            how = f"SLURM_DISTRIBUTION={self.distribution}" if self.distribution else \
                "a distribution other than block"
            raise ConfigError(
                f"Slurm placed task {self.rank} (SLURM_PROCID) on {self.node} as local task "
                f"{self.local_id} (SLURMD_NODENAME, SLURM_LOCALID), but block distribution "
                f"over SLURM_STEP_NODELIST {','.join(self.nodes)} with tasks per node "
                f"{','.join(map(str, self.tasks_per_node))} puts it on {node} as local "
                f"task {local}: the step was not distributed by block ({how}), so no "
                f"task can know its peers' addresses; {_BLOCK_FIX}")

    def addresses(self) -> dict[str, list[str]]:
        """role -> ["node:port", ...] for the whole step."""
        jobs: dict[str, list[str]] = {}
        for rank, (node, local) in enumerate(self.placement()):
            role, _ = self.role_of(rank)
            jobs.setdefault(role, []).append(f"{node}:{self.port(local)}")
        return jobs

    def tf_config(self) -> dict[str, Any]:
        """This task's TF_CONFIG value (checked: see `check`); `ClusterConfig.from_env`
        validates it as any TF_CONFIG."""
        self.check()
        role, index = self.role_of(self.rank)
        return {"cluster": self.addresses(), "task": {"type": role, "index": index}}
