"""The exit-code contract under Slurm: each task's verdict, and the job's decision.

srun's exit code cannot be trusted: it is the highest over the tasks, so a
task's permanent exit 1 comes back as 143 when a peer was terminated after
it. So every task records its own verdict (its cause and code, written by
`trainexec slurm-exec` when its program ends) under the run's records::

    <model_dir>/trainexec/slurm/<job id>-<restart count>/<role>-<index>.json

and the batch script, once srun returns, asks `decide` what the job does
(`trainexec slurm-verdict`):

* a task with a permanent cause (1 `user_error`, 2 `config_error`, any code
  below 128 but 0) -> `fail`: the job ends with that code, no requeue;
* else a retryable cause (143 preempted, 170 peer lost, 171 server
  unavailable, a signal), or a task with no verdict (SIGKILLed, its node
  lost) -> `requeue` while SLURM_RESTART_COUNT < --max-restarts, else `fail`
  with the retryable code;
* else (every task 0) -> `succeed`.

The job's exit code is the contract's code of the cause, so a site that set
`RequeueExit=143,170,171` requeues what trainexec calls retryable.

Example:
    ```python
    write_verdict(model_dir, run_key("123", 0), "worker:1", 143)
    decision = decide(read_verdicts(model_dir, run_key("123", 0)), expected, 0, 3)
    decision.action, decision.exit_code      # "requeue", 143
    ```
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from typing import Mapping, Sequence

from trainexec.contract.exit_codes import CAUSES, ExitCodes
from trainexec.records.layout import RECORDS_DIR, record_path, task_file_name, write_json

__all__ = ["FAIL", "REQUEUE", "SLURM_DIR", "SUCCEED", "Decision", "TaskVerdict",
           "cause_of", "decide", "read_verdicts", "run_key", "verdict_dir", "write_verdict"]

logger = logging.getLogger(__name__)

SLURM_DIR = "slurm"
SUCCEED = "succeed"
FAIL = "fail"
REQUEUE = "requeue"
SIGNALLED = "signalled"
FAILED = "failed"


def run_key(job_id: str, restart_count: int) -> str:
    """One run of a job: `<job id>-<restart count>` (a requeue starts a new one)."""
    return f"{job_id}-{restart_count}"


def verdict_dir(model_dir: str, key: str) -> str:
    return record_path(model_dir, f"{RECORDS_DIR}/{SLURM_DIR}/{key}")


def cause_of(code: int, codes: ExitCodes | None = None) -> str:
    """The contract's cause of an exit code (a negative code: killed by that signal,
    read as 128 + the signal: SIGTERM is 143, preempted)."""
    codes = codes or ExitCodes()
    code = 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says
    for cause in CAUSES:
        if codes.code_for(cause) == code:
            return cause
    return SIGNALLED if code >= 128 else FAILED


@dataclasses.dataclass(frozen=True)
class TaskVerdict:
    """How one task of one run ended: `cause` and `code` (the contract's)."""

    task: str
    cause: str
    code: int
    node: str = ""
    ended_at: float = 0.0

    @classmethod
    def parse(cls, data: object) -> "TaskVerdict":
        if not isinstance(data, dict):
            raise ValueError(f"expected an object, got {data!r}")
        return cls(task=str(data["task"]), cause=str(data["cause"]), code=int(data["code"]),
                   node=str(data.get("node", "")), ended_at=float(data.get("ended_at", 0)))


def write_verdict(model_dir: str, key: str, task: str, code: int, node: str = "",
                  codes: ExitCodes | None = None) -> TaskVerdict:
    """Records how `task` ended (atomically); `code` as `subprocess` reports it
    (negative: killed by a signal, recorded as 128 + the signal)."""
    shell_code = 128 - code if code < 0 else code
    verdict = TaskVerdict(task, cause_of(code, codes), shell_code, node, time.time())
    write_json(os.path.join(verdict_dir(model_dir, key), task_file_name(task)),
               dataclasses.asdict(verdict))
    return verdict


def read_verdicts(model_dir: str, key: str) -> dict[str, TaskVerdict]:
    """task -> verdict of every task of run `key` that left one."""
    directory = verdict_dir(model_dir, key)
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return {}
    found = {}
    for name in names:
        if name.endswith(".json"):
            verdict = _read(os.path.join(directory, name))
            if verdict is not None:
                found[verdict.task] = verdict
    return found


def _read(path: str) -> TaskVerdict | None:
    """A verdict file (local: read without TensorFlow, for the batch script);
    None, with a warning, when it does not parse."""
    try:
        with open(path) as f:
            return TaskVerdict.parse(json.load(f))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as err:
        logger.warning("Ignoring the unreadable Slurm task verdict %s: %s", path, err)
        return None


@dataclasses.dataclass(frozen=True)
class Decision:
    """What the job does once its step ended: `action` (succeed, fail, requeue),
    the job's `exit_code`, and `reason`, one line for the job's log."""

    action: str
    exit_code: int
    reason: str


def decide(verdicts: Mapping[str, TaskVerdict], expected: Sequence[str], restart_count: int,
           max_restarts: int, codes: ExitCodes | None = None) -> Decision:
    """What the job does, from its tasks' verdicts (pure; see the module doc)."""
    codes = codes or ExitCodes()
    # A task that could not even be placed records itself as "rank:N": it counts too.
    ordered = ([verdicts[t] for t in expected if t in verdicts]
               + [v for t, v in verdicts.items() if t not in expected])
    permanent = [v for v in ordered if v.code != 0 and not codes.is_retryable(v.code)]
    if permanent:
        first = permanent[0]
        return Decision(FAIL, first.code, f"{first.task} ended {first.code} ({first.cause}), "
                        "which a restart would repeat: the job fails without requeue")
    missing = [t for t in expected if t not in verdicts]
    retryable = [v for t in expected if (v := verdicts.get(t)) is not None and v.code != 0]
    if not missing and not retryable:
        return Decision(SUCCEED, 0, f"all {len(expected)} tasks ended 0")
    what = [f"{v.task} ended {v.code} ({v.cause})" for v in retryable]
    what += [f"{task} left no verdict (killed, or its node lost)" for task in missing]
    code = retryable[0].code if retryable else codes.code_for("peer_lost")
    if restart_count < max_restarts:
        return Decision(REQUEUE, code, f"{'; '.join(what)}: retryable, requeue "
                        f"{restart_count + 1} of {max_restarts}")
    return Decision(FAIL, code, f"{'; '.join(what)}: retryable, but the job was requeued "
                    f"{restart_count} times already (--max-restarts {max_restarts}): "
                    "the job fails")
