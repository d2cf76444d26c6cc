"""trainexec's own log lines in a task's output, by default.

A task started by a cluster manager usually configures no Python logging, and
then trainexec's INFO lines (the task's role, what it waits for, why the
evaluator stopped, the completion record) would never show.
`configure_task_logging(task_name)` shows them on stderr, each line prefixed
with `[task_name]`, unless the user configured logging themselves. Under
`trainexec launch`, which already prefixes every line of a task's output
(`TRAINEXEC_LAUNCHED_TASK` is set), the prefix is left out.

Example:
    ```python
    configure_task_logging("worker:1")
    logging.getLogger("trainexec.x").info("hello")   # [worker:1] INFO trainexec.x: hello
    ```
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Mapping

__all__ = ["LAUNCHED_TASK_ENV", "configure_task_logging"]

# Set by `trainexec launch` in each task's environment: the task's name.
LAUNCHED_TASK_ENV = "TRAINEXEC_LAUNCHED_TASK"
_OUR_HANDLER = "_trainexec_task_handler"


def configure_task_logging(task_name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Shows trainexec's INFO lines, prefixed `[task_name]`, on stderr.

    Only when neither the `trainexec` logger nor the root logger has a handler
    (the user configured none); a handler added by an earlier call is updated.
    The `trainexec` logger then stops passing its records to the root logger, so
    that a root handler added later (by a library's `logging.info()` call, say)
    does not print each line twice. Returns whether trainexec's handler is in place.
    """
    environ = os.environ if environ is None else environ
    package = logging.getLogger("trainexec")
    prefix = "" if environ.get(LAUNCHED_TASK_ENV) else f"[{task_name}] "
    formatter = logging.Formatter(f"{prefix}%(levelname)s %(name)s: %(message)s")
    ours = [h for h in package.handlers if getattr(h, _OUR_HANDLER, False)]
    if ours:
        for handler in ours:
            handler.setFormatter(formatter)
        return True
    if package.handlers or logging.getLogger().handlers:
        return False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    setattr(handler, _OUR_HANDLER, True)
    package.addHandler(handler)
    package.propagate = False
    if package.level == logging.NOTSET:
        package.setLevel(logging.INFO)
    return True
