"""What tasks tell the launcher about restarting: the restart-group announcements.

Some tasks cannot come back alone. Under MultiWorkerMirroredStrategy every
training step is a collective of the chief and all workers: when one dies its
peers block or fail with UnavailableError, so the whole training group must
stop and start again together, and that is one fault, one restart. Under
ParameterServerStrategy a dead worker comes back alone (the coordinator
reschedules its steps, and the job can even go on without it), while a dead ps
loses variables that only the coordinator (the chief) can restore.

Only the task knows its strategy, so it tells the launcher. The launcher
(`trainexec launch`, `trainexec.launch.LocalCluster`) sets `TRAINEXEC_LAUNCH_DIR`
in every task's environment; a task that knows its strategy writes
`<task_type>-<index>.json` there (`announce`) once it has planned, e.g. for an
MWMS worker:

```json
{"task": "worker:1", "strategy": "multi_worker_mirrored",
 "restart_group": ["chief:0", "worker:0", "worker:1"], "carry_on": false,
 "ends_by_itself": true}
```

and the launcher reads them back (`read_rules`). `KerasTrainer` jobs announce
by themselves (`trainexec.keras.faults.restart_rule`); the file stays valid across
restarts, as TF_CONFIG does not change. `carry_on` means the job may go on
without the task once no restarts are left (a ParameterServerStrategy worker).
How the launcher combines announcements with `--restart-group` flags is
`trainexec.launch.restart_groups`.

The exit-code contract's `preempted` code (143 by default, see
`trainexec.contract.exit_codes`) means "preempted: I saved a checkpoint, restart me".
The launcher restarts the group of such a task like any retryable failure, but
lets its peers, which save in the same step, end by themselves within the grace
period instead of killing them at once.

This module is all a task imports to announce: it does not load the launcher.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from typing import Iterable, Mapping

from trainexec.records.layout import atomic_write_text, task_file_name

__all__ = ["LAUNCH_DIR_ENV", "RestartRule", "announce", "read_rules"]

# Tasks print this name in their logs ("INFO trainexec.restart_groups: ..."), as before
# the module moved into trainexec.launch.
logger = logging.getLogger("trainexec.restart_groups")

LAUNCH_DIR_ENV = "TRAINEXEC_LAUNCH_DIR"


@dataclasses.dataclass(frozen=True)
class RestartRule:
    """What to restart when `task` fails.

    Attributes:
      task: the task's name, "worker:1".
      group: the tasks restarted with it (itself included).
      carry_on: with no restarts left, the job goes on without the task.
      strategy: what the task announced it trains with ("" when unknown).
      ends_by_itself: the task exits by itself once training is over (every
        KerasTrainer task): by default the launcher waits for it rather than
        stopping it when the chief and the evaluator are done.
    """

    task: str
    group: tuple[str, ...]
    carry_on: bool = False
    strategy: str = ""
    ends_by_itself: bool = False

    def to_json(self) -> str:
        return json.dumps({"task": self.task, "strategy": self.strategy,
                           "restart_group": list(self.group), "carry_on": self.carry_on,
                           "ends_by_itself": self.ends_by_itself})


def announce(rule: RestartRule, environ: Mapping[str, str] | None = None) -> str | None:
    """Writes `rule` into the launcher's directory, if a launcher set one.

    Returns the file written, or None when not under a launcher (or the write
    failed: the launcher then restarts the task alone, so it is only logged).
    """
    environ = os.environ if environ is None else environ
    directory = environ.get(LAUNCH_DIR_ENV)
    if not directory:
        return None
    path = os.path.join(directory, task_file_name(rule.task))
    try:
        atomic_write_text(path, rule.to_json())
    except OSError as err:
        logger.warning("Could not tell the launcher this task's restart group (%s=%s: "
                       "%s); if it fails, the launcher restarts it alone", LAUNCH_DIR_ENV,
                       directory, err)
        return None
    logger.info("Restart group for the launcher: %s (%s)", ", ".join(rule.group),
                "the job may go on without this task" if rule.carry_on
                else "restarted together")
    return path


def read_rules(directory: str | None, tasks: Iterable[str]) -> dict[str, RestartRule]:
    """The rules tasks announced in `directory`, for the names in `tasks`.

    A missing, half-written or malformed file counts as no announcement.
    """
    rules: dict[str, RestartRule] = {}
    if not directory:
        return rules
    for task in tasks:
        try:
            with open(os.path.join(directory, task_file_name(task))) as f:
                data = json.load(f)
            group = tuple(str(name) for name in data["restart_group"])
            rules[task] = RestartRule(task, group, bool(data.get("carry_on", False)),
                                      str(data.get("strategy", "")),
                                      bool(data.get("ends_by_itself", False)))
        except FileNotFoundError:
            continue
        except (OSError, ValueError, KeyError, TypeError) as err:
            logger.warning("ignoring %s's restart group file: %s", task, err)
    return rules
