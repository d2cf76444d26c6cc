"""Settings read from environment variables, checked once where they are read.

Example:
    ```python
    secs = seconds_setting("TRAINEXEC_EXIT_DEADLINE_SECS", 10.0,
                           "0 turns the bound off", environ=os.environ)
    ```
"""

from __future__ import annotations

import math
import os
from typing import Mapping

from trainexec.errors import ConfigError

__all__ = ["seconds_setting"]


def seconds_setting(name: str, default: float, meaning: str,
                    environ: Mapping[str, str] | None = None) -> float:
    """`name` from `environ` (default `os.environ`) as a finite number of seconds >= 0;
    `default` when it is unset or blank. Anything else raises ConfigError naming the
    variable, its value, what it means (`meaning`) and the default."""
    text = (os.environ if environ is None else environ).get(name, "").strip()
    if not text:
        return default
    try:
        secs = float(text)
    except ValueError:
        secs = -1.0
    if not (secs >= 0 and math.isfinite(secs)):
        raise ConfigError(f"{name}={text!r} must be a number of seconds >= 0 ({meaning}; "
                          f"default {default:g}), e.g. {name}={default:g}")
    return secs
