"""How trainexec writes durations and rates for people: `42s`, `3m05s`, `41.3`.

One formatter each, shared by the training progress lines
(`trainexec.keras.fit.progress`) and the launcher's live view
(`trainexec.launch.status_view`), so a time left reads the same in both. An
unknown value (None, not a number, not finite: a status record may hold
anything) reads `?`.

Example:
    ```python
    format_secs(185)    # '3m05s'
    format_rate(0.523)  # '0.52'
    ```
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["format_rate", "format_secs"]


def _known(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def format_secs(secs: Any) -> str:
    """`42s`, `3m05s`, `1h02m` (negative reads `0s`); `?` when unknown."""
    if not _known(secs):
        return "?"
    secs = max(0, int(round(secs)))
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{secs % 3600 // 60:02d}m"


def format_rate(rate: Any) -> str:
    """`0.52`, `41.3`, `1840`; `?` when unknown."""
    if not _known(rate):
        return "?"
    return f"{rate:.2f}" if rate < 10 else f"{rate:.1f}" if rate < 1000 else f"{rate:.0f}"
