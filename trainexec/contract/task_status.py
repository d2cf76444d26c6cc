"""What a task tells `trainexec launch` about how far it is: its status records.

The launcher sets `TRAINEXEC_LAUNCH_DIR` in every task's environment (see
`trainexec.contract.restart_announcements`). A task that knows how far it is writes
`status/<task_type>-<index>.json` there, replacing the previous one
atomically: the training chief its latest progress (step, max_steps,
metrics, steps per second, time left; `trainexec.keras.fit.progress`), the
evaluator its latest evaluation (step and metrics). The launcher's live view
(`trainexec.launch.status_view`) reads them back with `read_statuses`; a task
that writes none (a hand-written job) shows its process state only. A
record's `time` is the reporter's clock (`SystemClock`: `time.monotonic`,
which the launcher on the same machine shares).

Example:
    ```python
    reporter = StatusReporter.from_env("chief:0")   # None when not under a launcher
    if reporter is not None:
        reporter.report(TRAINING, {"step": 200, "max_steps": 600, "metrics": {"loss": 0.3}})
    ```

This module is all a task imports to report: it does not load the launcher.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Iterable, Mapping

from trainexec.clock import Clock, SystemClock
from trainexec.records.layout import atomic_write_text, task_file_name
from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV

__all__ = ["EVALUATION", "STATUS_DIR", "TRAINING", "StatusReporter", "read_statuses"]

logger = logging.getLogger(__name__)

STATUS_DIR = "status"
TRAINING = "training"
EVALUATION = "evaluation"


class StatusReporter:
    """Writes one task's status record into the launcher's directory."""

    def __init__(self, launch_dir: str, task: str, clock: Clock | None = None) -> None:
        self.directory = os.path.join(launch_dir, STATUS_DIR)
        self.task = task
        self._clock = clock or SystemClock()
        self._failed = False

    @classmethod
    def from_env(cls, task: str, environ: Mapping[str, str] | None = None,
                 clock: Clock | None = None) -> "StatusReporter | None":
        """A reporter when a launcher set `TRAINEXEC_LAUNCH_DIR`, else None."""
        environ = os.environ if environ is None else environ
        directory = environ.get(LAUNCH_DIR_ENV)
        return cls(directory, task, clock) if directory else None

    def report(self, kind: str, data: Mapping[str, Any]) -> bool:
        """Replaces the task's record with `{"task", "kind", "time", **data}`.

        A failed write is logged once and otherwise ignored: the view is a
        convenience, never a reason to stop a task.
        """
        path = os.path.join(self.directory, task_file_name(self.task))
        try:
            atomic_write_text(path, json.dumps(
                {"task": self.task, "kind": kind, "time": self._clock.now(), **data}))
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
            with open(os.path.join(launch_dir, STATUS_DIR, task_file_name(task))) as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            statuses[task] = record
    return statuses
