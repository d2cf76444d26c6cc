"""Finding checkpoints and telling complete ones from ones still being written.

A TensorFlow (V2) checkpoint `prefix` is complete when `prefix.index` and every
`prefix.data-NNNNN-of-MMMMM` shard exist and the index can be read. Writers put
the data shards down first and the index last, and only then name the prefix
in the directory's `checkpoint` state file; copies and some file systems do not
keep that order, so evaluators check before they load.

Example::

    latest = latest_checkpoint(model_dir)            # from the state file
    if latest and is_complete(latest.path):
        ...
"""

from __future__ import annotations

import dataclasses
import os
import re

__all__ = [
    "CheckpointInfo",
    "checkpoint_step",
    "incomplete_reason",
    "is_complete",
    "latest_checkpoint",
    "missing_files",
]

_STEP_SUFFIX = re.compile(r"-(\d+)$")
_SHARD = re.compile(r"\.data-(\d+)-of-(\d+)$")


@dataclasses.dataclass(frozen=True)
class CheckpointInfo:
    """A checkpoint prefix and the training step in its name (None if none)."""

    path: str
    step: int | None

    @classmethod
    def from_path(cls, path: str) -> "CheckpointInfo":
        return cls(path=path, step=checkpoint_step(path))


def checkpoint_step(path: str) -> int | None:
    """The step suffix of a prefix: `model.ckpt-1200` -> 1200, else None."""
    match = _STEP_SUFFIX.search(os.path.basename(path))
    return int(match.group(1)) if match else None


def missing_files(prefix: str) -> list[str]:
    """Files a complete checkpoint at `prefix` has and this one lacks."""
    import tensorflow as tf

    missing = []
    if not tf.io.gfile.exists(prefix + ".index"):
        missing.append(prefix + ".index")
    shards = tf.io.gfile.glob(tf.io.gfile.join(
        os.path.dirname(prefix), _glob_escape(os.path.basename(prefix)) + ".data-*-of-*"))
    counts = {int(m.group(2)) for m in map(_SHARD.search, shards) if m}
    if not counts:
        missing.append(prefix + ".data-00000-of-00001")
        return missing
    total = max(counts)
    present = {int(m.group(1)) for m in map(_SHARD.search, shards)
               if m and int(m.group(2)) == total}
    missing.extend(f"{prefix}.data-{i:05d}-of-{total:05d}"
                   for i in range(total) if i not in present)
    return missing


def _glob_escape(name: str) -> str:
    return re.sub(r"([*?\[\]])", r"[\1]", name)


def incomplete_reason(prefix: str) -> str | None:
    """Why the checkpoint at `prefix` cannot be loaded yet, or None if complete."""
    import tensorflow as tf

    missing = missing_files(prefix)
    if missing:
        return "missing " + ", ".join(os.path.basename(m) for m in missing)
    try:
        tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as err:
        return f"unreadable index ({type(err).__name__})"
    return None


def is_complete(prefix: str) -> bool:
    """True when every file of the checkpoint exists and its index reads."""
    return incomplete_reason(prefix) is None


def latest_checkpoint(directory: str) -> CheckpointInfo | None:
    """The newest checkpoint named by `directory`'s state file, or None.

    A state file caught half-written reads as "no checkpoint yet".
    """
    import tensorflow as tf

    try:
        path = tf.train.latest_checkpoint(directory)
    except (tf.errors.OpError, ValueError):
        return None
    return CheckpointInfo.from_path(path) if path else None
