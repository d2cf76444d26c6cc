"""What a task tells `trainexec launch` about how far it is: its status records.

The launcher sets `TRAINEXEC_LAUNCH_DIR` in every task's environment (see
`trainexec.restart_announcements`). A task that knows how far it is writes
`status/<task_type>-<index>.json` there, replacing the previous one
atomically: the training chief its latest progress (step, max_steps,
metrics, steps per second, time left; `trainexec.keras.progress`), the
evaluator its latest evaluation (step and metrics). The launcher's live view
(`trainexec.launch.status_view`) reads them back with `read_statuses`; a task
that writes none (a hand-written job) shows its process state only.

Example::

    reporter = StatusReporter.from_env("chief:0")   # None when not under a launcher
    if reporter is not None:
        reporter.report(TRAINING, {"step": 200, "max_steps": 600, "metrics": {"loss": 0.3}})

This module is all a task imports to report: it does not load the launcher.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any, Iterable, Mapping

from trainexec.restart_announcements import LAUNCH_DIR_ENV

__all__ = ["EVALUATION", "STATUS_DIR", "TRAINING", "StatusReporter", "read_statuses"]

logger = logging.getLogger(__name__)

STATUS_DIR = "status"
TRAINING = "training"
EVALUATION = "evaluation"


def _file_name(task: str) -> str:
    return task.replace(":", "-") + ".json"


class StatusReporter:
    """Writes one task's status record into the launcher's directory."""

    def __init__(self, launch_dir: str, task: str) -> None:
        self.directory = os.path.join(launch_dir, STATUS_DIR)
        self.task = task
        self._failed = False

    @classmethod
    def from_env(cls, task: str, environ: Mapping[str, str] | None = None
                 ) -> "StatusReporter | None":
        """A reporter when a launcher set `TRAINEXEC_LAUNCH_DIR`, else None."""
        environ = os.environ if environ is None else environ
        directory = environ.get(LAUNCH_DIR_ENV)
        return cls(directory, task) if directory else None

    def report(self, kind: str, data: Mapping[str, Any]) -> bool:
        """Replaces the task's record with `{"task", "kind", "time", **data}`.

        A failed write is logged once and otherwise ignored: the view is a
        convenience, never a reason to stop a task.
        """
        path = os.path.join(self.directory, _file_name(self.task))
        temporary = f"{path}.tmp-{os.getpid()}"
        try:
            os.makedirs(self.directory, exist_ok=True)
            with open(temporary, "w") as f:
                json.dump({"task": self.task, "kind": kind, "time": time.time(), **data}, f)
            os.replace(temporary, path)
        except (OSError, TypeError, ValueError) as err:
            if not self._failed:
                logger.debug("Could not write the status record for the launcher (%s): %s",
                             path, err)
            self._failed = True
            return False
        return True


def read_statuses(launch_dir: str | None, tasks: Iterable[str]) -> dict[str, dict]:
    """The records of the tasks named in `tasks`; a missing, half-written or
    malformed one counts as none."""
    statuses: dict[str, dict] = {}
    if not launch_dir:
        return statuses
    for task in tasks:
        try:
            with open(os.path.join(launch_dir, STATUS_DIR, _file_name(task))) as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            statuses[task] = record
    return statuses
