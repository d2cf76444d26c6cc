"""How the demo jobs report the evaluator's (or a local run's) result.

    report_result((metrics, exports), result_file="/tmp/run/final_result.json", secs=12.5)
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["report_result"]


def report_result(result: Any, result_file: str | None, secs: float) -> None:
    """Prints `(metrics, exports)` and writes them as JSON to `result_file`;
    nothing for a role that did not evaluate (None, or no metrics)."""
    metrics, exports = result or (None, None)
    if metrics is None:
        return
    shown = {k: float(v) for k, v in (metrics or {}).items()}
    exports = [e.decode() if isinstance(e, bytes) else str(e) for e in exports or []]
    print(f"final metrics: {json.dumps(shown, sort_keys=True)}")
    print(f"exports: {exports}")
    if result_file:
        with open(result_file, "w") as f:
            json.dump({"metrics": shown, "exports": exports, "secs": secs}, f)
