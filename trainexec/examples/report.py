"""How the demo jobs report the evaluator's (or a local run's) result.

    report_result(trainexec.train_and_evaluate(...), "/tmp/run/final_result.json", 12.5)
"""

from __future__ import annotations

import json

from trainexec.tasks.result import TrainResult

__all__ = ["report_result"]


def report_result(result: TrainResult | tuple | None, result_file: str | None,
                  secs: float) -> None:
    """Prints the result's metrics and exports (trainexec's `TrainResult`, or
    tf.estimator's pair) and writes them as JSON to `result_file`; nothing for a role
    that did not evaluate (None)."""
    if result is None:
        return
    metrics, exports = result
    if metrics is None:  # tf.estimator's local run that evaluated no checkpoint
        return
    shown = {k: float(v) for k, v in metrics.items()}
    exports = [e.decode() if isinstance(e, bytes) else str(e) for e in exports or []]
    print(f"final metrics: {json.dumps(shown, sort_keys=True)}")
    print(f"exports: {exports}")
    if result_file:
        with open(result_file, "w") as f:
            json.dump({"metrics": shown, "exports": exports, "secs": secs}, f)
