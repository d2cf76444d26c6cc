"""What an evaluation leaves for TensorBoard: its metrics as one Summary at the
evaluated global step, and the checkpoint it read, in `<model_dir>/eval[_<name>]`
(the event files tf.estimator wrote).

Example:
    ```python
    write_eval_summaries(output_dir, {"accuracy": 0.9, "loss": 0.3, "global_step": 100},
                         "/m/model.ckpt-100", graph)
    ```
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

import numpy as np
import tensorflow as tf
from google.protobuf import message

__all__ = ["GLOBAL_STEP", "describe_metrics", "metrics_summary", "write_eval_summaries"]

logger = logging.getLogger(__name__)

GLOBAL_STEP = "global_step"


def describe_metrics(results: Mapping[str, Any]) -> str:
    """`accuracy = 0.9, loss = 0.3` (sorted; serialized summaries left out)."""
    return ", ".join(f"{key} = {value}" for key, value in sorted(results.items())
                     if not isinstance(value, bytes))


def metrics_summary(results: Mapping[str, Any]) -> Any:
    """One Summary of the metrics (not the global step), by value type: numbers
    as scalars, serialized Summary protos as their values (tagged
    `<metric>/<index>`), arrays as tensors; anything else is skipped, warned."""
    summary = tf.compat.v1.Summary()
    for key, value in results.items():
        if value is None or key == GLOBAL_STEP:
            continue
        if isinstance(value, (np.floating, float)):
            summary.value.add(tag=key, simple_value=float(value))
        elif isinstance(value, (np.integer, int)):
            summary.value.add(tag=key, simple_value=int(value))
        elif isinstance(value, bytes):
            try:
                parsed = tf.compat.v1.Summary.FromString(value)
            except message.DecodeError:
                logger.warning("Skipping summary for %s: not a serialized Summary", key)
                continue
            for index, item in enumerate(parsed.value):
                item.tag = f"{key}/{index}"
            summary.value.extend(parsed.value)
        elif isinstance(value, np.ndarray):
            item = summary.value.add(tag=key, node_name=key)
            item.tensor.CopyFrom(tf.make_tensor_proto(value))
        else:
            logger.warning("Skipping summary for %s: a %s is not a number, an array or "
                           "a serialized Summary", key, type(value).__name__)
    return summary


def write_eval_summaries(output_dir: str, results: Mapping[str, Any],
                         checkpoint_path: str, graph: Any) -> None:
    """Writes `results` (with their global step) and `checkpoint_path` to
    `output_dir`'s event file, logging tf.estimator's "Saving dict" line. The
    evaluation's `graph` goes into the event file with the first summary."""
    step = int(results[GLOBAL_STEP])
    logger.info("Saving dict for global step %d: %s", step, describe_metrics(results))
    with graph.as_default():  # a FileWriter refuses eager mode
        writer = tf.compat.v1.summary.FileWriterCache.get(output_dir)
    writer.add_summary(metrics_summary(results), step)
    path_summary = tf.compat.v1.Summary()
    path_summary.value.add(tag="checkpoint_path", tensor=tf.make_tensor_proto(
        checkpoint_path, dtype=tf.string))
    writer.add_summary(path_summary, step)
    writer.flush()
