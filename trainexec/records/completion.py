"""The record that training has finished, kept under the model directory.

When the chief's (or a local run's) training returns, it writes
`<model_dir>/trainexec/training_complete.json`:

```json
{"global_step": 1000, "checkpoint": ".../model.ckpt-1000",
 "max_steps": 1000, "finished_at": 1763772000.5}
```

Evaluators (the Estimator evaluator task and `SidecarEvaluator`) read it to stop
after the last checkpoint even when `max_steps` is None. A chief starting a new
run clears it first. It is written and read through `trainexec.records.layout`.

Example:
    ```python
    record_training_complete(model_dir, checkpoint, global_step=1000, max_steps=1000)
    done = read_training_complete(model_dir)
    if done and done.matches(max_steps=1000): ...
    ```
"""

from __future__ import annotations

import dataclasses
import logging
import time

from trainexec.records.layout import COMPLETION_FILE, read_record, record_path, write_json_record

__all__ = [
    "COMPLETION_FILE",
    "TrainingComplete",
    "clear_training_complete",
    "completion_path",
    "read_training_complete",
    "record_training_complete",
]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class TrainingComplete:
    """What the chief recorded when training returned."""

    global_step: int | None
    checkpoint: str | None
    max_steps: int | None
    finished_at: float

    def matches(self, max_steps: int | None) -> bool:
        """False when the record is from an earlier run with other `max_steps`."""
        return max_steps is None or self.max_steps is None or self.max_steps == max_steps

    @classmethod
    def from_json(cls, data: dict) -> "TrainingComplete":
        return cls(global_step=data.get("global_step"), checkpoint=data.get("checkpoint"),
                   max_steps=data.get("max_steps"), finished_at=float(data["finished_at"]))


def completion_path(model_dir: str) -> str:
    return record_path(model_dir, COMPLETION_FILE)


def record_training_complete(model_dir: str, checkpoint: str | None,
                             global_step: int | None, max_steps: int | None,
                             wall_time: float | None = None) -> TrainingComplete:
    """Records that training finished at `checkpoint` (atomically)."""
    record = TrainingComplete(
        global_step=None if global_step is None else int(global_step),
        checkpoint=checkpoint,
        max_steps=None if max_steps is None else int(max_steps),
        finished_at=time.time() if wall_time is None else wall_time)
    write_json_record(completion_path(model_dir), record)
    logger.info("Recorded training complete at step %s in %s",
                record.global_step, completion_path(model_dir))
    return record


def read_training_complete(model_dir: str) -> TrainingComplete | None:
    """The completion record, or None when training has not finished."""
    return read_record(completion_path(model_dir), TrainingComplete.from_json,
                       "completion record")


def clear_training_complete(model_dir: str) -> None:
    """Removes an earlier run's record (a new run is starting)."""
    import tensorflow as tf

    path = completion_path(model_dir)
    if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)
        logger.info("Cleared the previous run's completion record %s", path)
