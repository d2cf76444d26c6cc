"""The launcher's options and their checks, for `LocalCluster` and `trainexec launch` alike.

Both front ends take the same options; each rule is written once, here, and a
problem is told in the caller's words: Python keywords for `LocalCluster`
("workers is -1: expected an integer >= 0"), flags for the command line
("--workers -1 is negative: give 0 or more, e.g. --workers 2"). Either way it
is a `ConfigError`; `trainexec launch` prints it and exits 2. The options that
name tasks (`wait_for`, `restart_groups`) are expanded to task names here too.

Example:
    ```python
    check_options(["python", "train.py"], workers=2, ps=1, chief=True,
                  max_restarts=0, grace_secs=5.0)            # raises ConfigError
    check_options(args.command, workers=args.workers, ..., timeout=args.timeout,
                  host=args.host, spelling=FLAGS)            # as `trainexec launch` does
    ```
"""

from __future__ import annotations

import dataclasses
import ipaddress
from typing import Any, Mapping, Sequence

from trainexec.cluster.config import CHIEF, EVALUATOR, WORKER
from trainexec.errors import ConfigError
from trainexec.launch.network import NETWORKS, PRIVATE
from trainexec.launch.policy import EXIT_CODE, RESTART_POLICIES
from trainexec.launch.restart_groups import parse_group_flag
from trainexec.launch.task import TaskSpec

__all__ = ["FLAGS", "KEYWORDS", "check_network", "check_options", "check_run_options",
           "default_wait_for", "expand_restart_groups", "expand_restart_policy",
           "expand_wait_for"]

KEYWORDS = "keywords"  # LocalCluster(workers=...)
FLAGS = "flags"  # trainexec launch --workers ...


@dataclasses.dataclass(frozen=True)
class _Words:
    """How one problem is told: with LocalCluster's keywords, with the command's flags."""

    keywords: str
    flags: str


_COUNT = _Words("{option} is {value!r}: expected an integer >= 0",
                "{flag} {value} is negative: give 0 or more, e.g. {flag} {example}")
_COUNTS = (("workers", "--workers", 2), ("ps", "--ps", 1), ("max_restarts", "--max-restarts", 3))
_NO_TRAINING_TASK = _Words(
    "chief=False with workers=0 leaves no training task: keep the chief or use workers >= 1",
    "--no-chief with --workers 0 leaves no training task: "
    "drop --no-chief or pass --workers 1 or more")
_TIMEOUT = _Words("timeout is {value!r}: expected seconds > 0",
                  "--timeout {value:g} must be positive: give seconds, e.g. --timeout 600")
_GRACE = _Words("grace_secs is {value!r}: expected seconds >= 0",
                "--grace {value:g} is negative: give seconds >= 0, e.g. --grace 5")
_HOST = _Words('host is {value!r}: expected a host name or IP address, e.g. "127.0.0.1"',
               "--host {value!r} is not a host name or IP address, e.g. --host 127.0.0.1")
_NETWORK = _Words('network is {value!r}: use "private" (the default: a network namespace '
                  'of the tasks\' own) or "host"',
                  "--network {value!r}: use private (the default: a network namespace of "
                  "the tasks' own) or host")
_NOT_LOOPBACK = _Words(
    'host is {value!r}, which the tasks cannot reach in their private network (loopback '
    'only): use host="127.0.0.1", or network="host" to run them on this machine\'s network',
    "--host {value} cannot be reached by the tasks in their private network (loopback "
    "only): use --host 127.0.0.1, or --network host to run them on this machine's network")
_COMMAND = _Words('command is {value!r}: give the program and its arguments as a list, '
                  'e.g. ["python", "train.py"]',
                  "no command given: put the program to run after --, e.g. "
                  "trainexec launch --workers 2 -- python train.py")


def check_options(command: Any, *, workers: Any, ps: Any, chief: bool, max_restarts: Any,
                  grace_secs: float, timeout: float | None = None, host: str | None = None,
                  spelling: str = KEYWORDS) -> None:
    """Raises ConfigError for the first option that cannot work, in `spelling`'s words.

    The rules, in order: the counts (`workers`, `ps`, `max_restarts`) are integers
    >= 0; some task trains (a chief, or a worker); `timeout` (if given) is
    positive; `grace_secs` is >= 0; `host` (if given) is a host name or address;
    `command` is a non-empty list of arguments. `LocalCluster` leaves `timeout`
    to `wait()` and `host` to the TF_CONFIG address check.
    """
    for (option, flag, example), value in zip(_COUNTS, (workers, ps, max_restarts)):
        _check_count(option, flag, example, value, spelling)
    if not chief and workers == 0:
        _fail(_NO_TRAINING_TASK, spelling)
    _check_run(timeout, grace_secs, host, spelling)
    if isinstance(command, str) or not command:
        _fail(_COMMAND, spelling, value=command)


def check_run_options(*, max_restarts: Any, grace_secs: float, timeout: float | None = None,
                      host: str | None = None, spelling: str = KEYWORDS) -> None:
    """The rules of `check_options` that do not depend on the job's shape (a job
    read from a manifest brings its own roles and commands): `max_restarts`,
    `timeout`, `grace_secs`, `host`."""
    _check_count(*_COUNTS[2], max_restarts, spelling)
    _check_run(timeout, grace_secs, host, spelling)


def _fail(words: _Words, spelling: str, **fields: Any) -> None:
    text = words.flags if spelling == FLAGS else words.keywords
    raise ConfigError(text.format(**fields))


def _check_count(option: str, flag: str, example: int, value: Any, spelling: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        _fail(_COUNT, spelling, option=option, flag=flag, example=example, value=value)


def _check_run(timeout: float | None, grace_secs: float, host: str | None,
               spelling: str) -> None:
    if timeout is not None and timeout <= 0:
        _fail(_TIMEOUT, spelling, value=timeout)
    if grace_secs < 0:
        _fail(_GRACE, spelling, value=grace_secs)
    if host is not None and (not host or any(c.isspace() or c in "/," for c in host)):
        _fail(_HOST, spelling, value=host)


def check_network(network: Any, host: str, spelling: str = KEYWORDS) -> None:
    """Raises ConfigError unless `network` is "private" or "host", and, for a private
    network, `host` is a loopback address or "localhost" (the namespace has only `lo`)."""
    if network not in NETWORKS:
        _fail(_NETWORK, spelling, value=network)
    if network == PRIVATE and not _is_loopback(host):
        _fail(_NOT_LOOPBACK, spelling, value=host)


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def expand_restart_policy(restart_policy: str | Mapping[str, str],
                          tasks: Sequence[TaskSpec], spelling: str = KEYWORDS) -> dict[str, str]:
    """Each task's restart policy: one for all (`"ExitCode"`), or per job
    (`{"worker": "OnFailure"}`, others `ExitCode`). ConfigError naming a policy
    or job that does not exist."""
    def check(policy: Any) -> str:
        if policy not in RESTART_POLICIES:
            name = "--restart-policy" if spelling == FLAGS else "restart_policy"
            raise ConfigError(f"{name} {policy!r} is not a restart policy: use one of "
                              f"{', '.join(RESTART_POLICIES)} (Kubeflow TFJob's names, "
                              "case as written)")
        return policy

    if isinstance(restart_policy, str):
        return {t.name: check(restart_policy) for t in tasks}
    jobs = {t.task_type for t in tasks}
    for job in restart_policy:
        if job not in jobs:
            raise ConfigError(f"restart_policy names job {job!r}, which is not in this "
                              f"cluster: use one of {', '.join(sorted(jobs))}")
    return {t.name: check(restart_policy.get(t.task_type, EXIT_CODE)) for t in tasks}


def default_wait_for(chief: bool, evaluator: bool) -> list[str]:
    """The tasks that must exit 0 by default: the chief (worker:0 without one) and
    the evaluator."""
    return [CHIEF + ":0" if chief else WORKER + ":0"] + ([EVALUATOR + ":0"] if evaluator
                                                        else [])


def expand_wait_for(wait_for: Sequence[str], tasks: Sequence[TaskSpec]) -> list[str]:
    """Expands `wait_for` (task or job names) to task names, in task order."""
    if isinstance(wait_for, str) or not wait_for:
        raise ConfigError(f"wait_for is {wait_for!r}: give a list of task or job names, "
                          'e.g. ["chief", "worker", "evaluator"]')
    wanted: set[str] = set()
    for name in wait_for:
        matches = [t.name for t in tasks if name in (t.task_type, t.name)]
        if not matches:
            raise ConfigError(
                f"wait_for names {name!r}, which is not in this cluster: use a task "
                f"({', '.join(t.name for t in tasks)}) or a job name")
        wanted.update(matches)
    return [t.name for t in tasks if t.name in wanted]


def expand_restart_groups(groups: Sequence[Sequence[str] | str],
                          names: Sequence[str]) -> list[tuple[str, ...]]:
    """Expands each group (a list of names, or "chief,worker") to task names."""
    if isinstance(groups, str):
        groups = [groups]
    expanded = []
    for group in groups:
        text = group if isinstance(group, str) else ",".join(map(str, group))
        try:
            expanded.append(parse_group_flag(text, names))
        except ValueError as err:
            raise ConfigError(str(err).replace("--restart-group", "restart_groups")
                              ) from None
    return expanded
