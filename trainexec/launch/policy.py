"""The launcher's exit and restart policy: one pure decision per look at the tasks.

`decide(view)` reads a `JobView` (each task's state, the restart rules, the
primary tasks, the restart budget, interrupt and timeout) and returns one
`Decision`; `trainexec.launch.supervisor` acts on it and asks again until the
answer is WAIT. In order:

1. A task failed (exit code != 0, or killed by a signal the launcher did not
   send): take the one that ended first, unless other failed tasks' restart
   groups hold it: then they are one fault, charged to the widest group's task
   and restarting all those groups once (a ps killed under
   ParameterServerStrategy and its chief, which lost it, seen in the same look;
   the chief's own exit code, even a permanent one, then does not decide). If
   its restart policy restarts that exit (`ExitCode`, the default, as Kubeflow's
   TFJob: only what the exit-code contract calls retryable,
   `trainexec.contract.exit_codes`; `OnFailure`/`Always`: any failure; `Never`: none)
   and it has restarts left (it has caused fewer than `max_restarts`), RESTART
   its restart group (`trainexec.launch.restart_groups`; itself alone without
   one), charging one restart to it however many of the group failed too.
   Peers are killed at once (they cannot save without it), except after a
   preemption (the contract's `preempted` code: it saved), when they get the
   grace period to end by themselves. Otherwise LEAVE it if its rule says the
   job can carry on without it, else FAIL (`permanent` when its policy does not
   restart that exit).
2. Every primary task exited 0: SUCCEED, once the tasks that announced they
   end by themselves (`JobView.ending`) have (or at the deadline, or on an
   interrupt); what still runs then is stopped.
3. Interrupted: STOP. Past the deadline: STOP.
4. Nothing runs any more: FAIL (every task has ended but not the primaries).
5. Otherwise WAIT.

Example:
    ```python
    view = JobView(tasks=(TaskView("chief:0", RUNNING), TaskView("worker:0", FAILED, -9)),
                   rules={"worker:0": RestartRule("worker:0", ("chief:0", "worker:0"))},
                   primaries=("chief:0",), max_restarts=1)
    decide(view)  # Decision(RESTART, ("chief:0", "worker:0"), cause="worker:0", gentle=False)
    ```
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Mapping

from trainexec.contract.exit_codes import PREEMPTED, ExitCodes
from trainexec.contract.restart_announcements import RestartRule

__all__ = ["ALL_ENDED", "ALWAYS", "EXITED", "EXIT_CODE", "FAIL", "FAILED", "LEAVE", "LEFT",
           "NEVER", "ON_FAILURE", "RESTART", "RESTART_POLICIES", "RUNNING", "STOP",
           "STOPPED", "SUCCEED", "WAIT", "Action", "Decision", "JobView", "TaskState",
           "TaskView", "decide", "restarts_exit"]

# Restart policies, as Kubeflow's TFJob names them.
EXIT_CODE = "ExitCode"    # restart what the exit-code contract calls retryable
ON_FAILURE = "OnFailure"  # restart any failure
ALWAYS = "Always"         # as OnFailure: a task that exits 0 is done
NEVER = "Never"
RESTART_POLICIES = (EXIT_CODE, ON_FAILURE, ALWAYS, NEVER)


class TaskState(str, enum.Enum):
    """A task's state as the policy sees it. A `str`, so that a state reads and
    compares as its words ("exited 0")."""

    RUNNING = "running"
    EXITED = "exited 0"
    FAILED = "failed"      # non-zero exit, or a signal the launcher did not send
    STOPPED = "stopped"    # ended by the launcher
    LEFT = "left"          # failed, and the job goes on without it


class Action(str, enum.Enum):
    """What the launcher does next (`Decision.action`; see the module doc). A `str`,
    as `TaskState`."""

    WAIT = "wait"
    RESTART = "restart"
    LEAVE = "leave"
    FAIL = "fail"
    SUCCEED = "succeed"
    STOP = "stop"
    ALL_ENDED = "all ended"


# The states and actions by their old names (the policy's table tests use them).
RUNNING, EXITED, FAILED, STOPPED, LEFT = (TaskState.RUNNING, TaskState.EXITED,
                                          TaskState.FAILED, TaskState.STOPPED, TaskState.LEFT)
WAIT, RESTART, LEAVE, FAIL, SUCCEED, STOP, ALL_ENDED = (
    Action.WAIT, Action.RESTART, Action.LEAVE, Action.FAIL, Action.SUCCEED, Action.STOP,
    Action.ALL_ENDED)


@dataclasses.dataclass(frozen=True)
class TaskView:
    """One task as the policy sees it.

    `charged`: restarts this task has caused so far; `ended_at`: when its
    current run ended (monotonic seconds), to find the first failure;
    `restart_policy`: which of its failures are restarted (RESTART_POLICIES).
    """

    name: str
    state: TaskState
    code: int | None = None
    charged: int = 0
    ended_at: float = 0.0
    restart_policy: str = EXIT_CODE


@dataclasses.dataclass(frozen=True)
class JobView:
    tasks: tuple[TaskView, ...]
    primaries: tuple[str, ...]
    max_restarts: int = 0
    rules: Mapping[str, RestartRule] = dataclasses.field(default_factory=dict)
    interrupted: bool = False
    timed_out: bool = False
    ending: tuple[str, ...] = ()  # tasks that end by themselves: waited for after success
    codes: ExitCodes = dataclasses.field(default_factory=ExitCodes)


@dataclasses.dataclass(frozen=True)
class Decision:
    """What to do now. RESTART: stop what still runs of `tasks`, then start them
    all again, charging one restart to `cause`; `gentle`: SIGTERM and the grace
    period rather than SIGKILL. LEAVE / FAIL: `cause`; `permanent`: its restart
    policy does not restart that exit (restarts left or not). ALL_ENDED: `tasks`
    are the primaries that did not exit 0."""

    action: Action
    tasks: tuple[str, ...] = ()
    cause: str | None = None
    gentle: bool = False
    permanent: bool = False


def restarts_exit(restart_policy: str, code: int | None, codes: ExitCodes) -> bool:
    """Whether `restart_policy` restarts a task that ended with `code`."""
    if restart_policy == NEVER or code == 0:
        return False
    if restart_policy == EXIT_CODE:
        return codes.is_retryable(code)
    return True


def _group(task: TaskView, view: JobView) -> tuple[str, ...]:
    names = [t.name for t in view.tasks]
    rule = view.rules.get(task.name)
    members = set(rule.group) if rule else set()
    members.add(task.name)
    return tuple(name for name in names if name in members)


def _one_fault(failed: list[TaskView], view: JobView) -> tuple[TaskView, tuple[str, ...]]:
    """(cause, tasks to restart): the first of `failed` to end and its group, or,
    when wider groups of other failed tasks hold it, the widest one's task (the
    first of those) and the union of those groups."""
    groups = {t.name: _group(t, view) for t in failed}
    first = failed[0]
    holding = [t for t in failed[1:] if first.name in groups[t.name]
               and len(groups[t.name]) > len(groups[first.name])]
    if not holding:
        return first, groups[first.name]
    cause = max(holding, key=lambda t: len(groups[t.name]))
    members = {name for t in holding for name in groups[t.name]}
    return cause, tuple(t.name for t in view.tasks if t.name in members)


def decide(view: JobView) -> Decision:
    """What the launcher does next (pure; see the module doc)."""
    order = {t.name: i for i, t in enumerate(view.tasks)}
    failed = sorted((t for t in view.tasks if t.state == FAILED),
                    key=lambda t: (t.ended_at, order[t.name]))
    if failed:
        cause, group = _one_fault(failed, view)
        restartable = restarts_exit(cause.restart_policy, cause.code, view.codes)
        if restartable and cause.charged < view.max_restarts:
            return Decision(RESTART, group, cause.name,
                            gentle=cause.code == view.codes.code_for(PREEMPTED))
        rule = view.rules.get(cause.name)
        if rule is not None and rule.carry_on:
            return Decision(LEAVE, (cause.name,), cause.name, permanent=not restartable)
        return Decision(FAIL, (cause.name,), cause.name, permanent=not restartable)
    states = {t.name: t.state for t in view.tasks}
    if all(states[name] == EXITED for name in view.primaries):
        if (any(states.get(name) == RUNNING for name in view.ending)
                and not (view.interrupted or view.timed_out)):
            return Decision(WAIT)
        return Decision(SUCCEED)
    if view.interrupted or view.timed_out:
        return Decision(STOP)
    if not any(t.state == RUNNING for t in view.tasks):
        return Decision(ALL_ENDED, tuple(n for n in view.primaries if states[n] != EXITED))
    return Decision(WAIT)
