"""A quiet start: TensorFlow's C++ start-up INFO lines are not shown for launched tasks.

Every TensorFlow process prints its C++ start-up lines (`oneDNN custom
operations are on`, `Could not find cuda drivers`, `All log messages before
absl::InitializeLog() ...`), once per task. `trainexec launch` therefore:

* sets `TF_CPP_MIN_LOG_LEVEL=1` (warnings and errors still shown) in a task's
  environment unless the user set it, in the launcher's environment or the
  task's own (`task_environment`);
* holds TensorFlow's C++ log lines to that level in what it shows
  (`CppLogFilter`): TensorFlow 2.19 and later print their import-time lines
  before they read `TF_CPP_MIN_LOG_LEVEL`, whatever it says
  (tensorflow/tensorflow#100442). Only lines in the formats TensorFlow's C++
  logging writes are held back; every line is still kept in the task's output
  (`Task.output_lines()`, a failed task's last lines). `TF_CPP_MIN_LOG_LEVEL=0`
  shows them all.

Example:
    ```python
    env = task_environment({**os.environ, **task_env})   # TF_CPP_MIN_LOG_LEVEL=1 if unset
    hide = CppLogFilter.for_level(env["TF_CPP_MIN_LOG_LEVEL"])
    hide("I0000 00:00:1795606781.474123 22612 port.cc:153] oneDNN custom operations ...")  # True
    ```
"""

from __future__ import annotations

import re
from typing import Mapping

__all__ = ["DEFAULT_LEVEL", "LEVEL_ENV", "CppLogFilter", "task_environment"]

LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"
DEFAULT_LEVEL = "1"  # INFO hidden; warnings, errors and fatal errors shown

_SEVERITY = {"I": 0, "W": 1, "E": 2, "F": 3}
# absl (TensorFlow 2.16+): "I0000 00:00:1795606781.474123   22612 port.cc:153] ..."
_ABSL = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [^\s:]+:\d+\] ")
# TensorFlow's own (2.15 and before): "2026-11-25 11:40:03.624771: I tensorflow/...:38] ..."
_TSL = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([IWEF]) [^\s:]+:\d+\] ")
# absl's notice above its first lines, when they come before logging is set up.
_ABSL_NOTICE = ("WARNING: All log messages before absl::InitializeLog() is called are "
                "written to STDERR")


def task_environment(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with `TF_CPP_MIN_LOG_LEVEL=1` unless it sets the variable already."""
    env = dict(env)
    env.setdefault(LEVEL_ENV, DEFAULT_LEVEL)
    return env


class CppLogFilter:
    """Says whether a task's output line is a TensorFlow C++ log line below the
    task's `TF_CPP_MIN_LOG_LEVEL` (one not to show)."""

    def __init__(self, min_level: int) -> None:
        self.min_level = min_level

    @classmethod
    def for_level(cls, value: str | None) -> "CppLogFilter":
        """The filter for a `TF_CPP_MIN_LOG_LEVEL` value; one TensorFlow would not
        read as a number hides nothing."""
        try:
            return cls(int(str(value).strip()))
        except ValueError:
            return cls(0)

    def __call__(self, line: str) -> bool:
        if self.min_level <= 0:
            return False
        if line.rstrip() == _ABSL_NOTICE:
            return True
        match = _ABSL.match(line) or _TSL.match(line)
        return match is not None and _SEVERITY[match.group(1)] < self.min_level
