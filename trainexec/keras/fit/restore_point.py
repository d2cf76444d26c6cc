"""Every MultiWorkerMirroredStrategy task resumes from the same checkpoint.

MWMS tasks train in step: each restores the newest checkpoint it sees, and they
must all see the same one. On a shared file system with client caches (NFS
caches a "no such file" up to `acdirmax`, 60 s by default) a restarted worker
can miss the `checkpoint` state file the chief reads, start at step 0 while the
chief resumes at step 200, and the first save's collectives no longer match:
every task fails (exit 170), again and again until the cache expires.

So after the strategy is made and before restoring, the tasks gather the step of
the newest checkpoint each one sees (a collective `all_gather`) and all take the
highest. A task that sees an older one (or none) waits until the agreed
checkpoint is complete where it looks: its own files (`ckpt-<step>.index` and
the data shards) are names it never looked up before, so no cached "absent"
hides them. It waits up to `wait_secs`, which covers the storage's visibility
bound (`trainexec.records.storage`), and then fails with a message naming the checkpoint
and the storage, as a retryable `UnavailableError` (exit 170: a restart after the
cache expired sees it).

Example:
    ```python
    newest = agreed_checkpoint(strategy, model_dir, checkpoints.latest_checkpoint(model_dir))
    ```
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable

from trainexec.records import checkpoints
from trainexec.records.checkpoints import CheckpointInfo
from trainexec.records.storage import storage_of

__all__ = ["agreed_checkpoint", "gather_steps"]

logger = logging.getLogger(__name__)

WAIT_MARGIN_SECS = 30.0


def gather_steps(strategy: Any, step: int) -> list[int]:
    """The `step` of every replica of `strategy`, gathered by a collective."""
    import tensorflow as tf

    @tf.function
    def gather(value):
        context = tf.distribute.get_replica_context()
        return context.all_gather(tf.reshape(value, [1]), axis=0)

    result = strategy.run(gather, args=(tf.constant(step, dtype=tf.int64),))
    local = strategy.experimental_local_results(result)[0]
    return [int(s) for s in local.numpy().tolist()]


def agreed_checkpoint(strategy: Any, model_dir: str, newest: CheckpointInfo | None,
                      checkpoint_name: str, *, wait_secs: float | None = None,
                      poll_secs: float = 0.5,
                      gather: Callable[[Any, int], list[int]] = gather_steps,
                      sleep: Callable[[float], None] = time.sleep,
                      now: Callable[[], float] = time.monotonic) -> CheckpointInfo | None:
    """The checkpoint every task restores: the newest any task sees (module doc).

    Raises `tf.errors.UnavailableError` when the agreed checkpoint does not appear
    here within `wait_secs` (default: the storage's visibility bound plus 30 s).
    """
    mine = newest.step if newest is not None and newest.step is not None else 0
    steps = gather(strategy, mine)
    agreed = max(steps)
    if agreed <= mine:
        if len(set(steps)) > 1:
            logger.info("Tasks saw checkpoints at steps %s: all resume from step %s",
                        steps, agreed)
        return newest
    prefix = os.path.join(model_dir, f"{checkpoint_name}-{agreed}")
    storage = storage_of(model_dir)
    limit = (storage.visibility_secs + WAIT_MARGIN_SECS) if wait_secs is None else wait_secs
    logger.info("Another task resumes from %s; the newest this task sees is %s: waiting up "
                "to %.0fs for it to show here (%s)", prefix,
                newest.path if newest else "none", limit, storage.describe())
    deadline = now() + limit
    while True:
        reason = checkpoints.incomplete_reason(prefix)
        if reason is None:
            logger.info("Resuming from %s, as every task does", prefix)
            return CheckpointInfo(prefix, agreed)
        if now() >= deadline:
            import tensorflow as tf

            raise tf.errors.UnavailableError(None, None,
                f"Another task resumes from {prefix}, which this task still does not see "
                f"whole after {limit:.0f}s ({reason}) on {storage.describe()}: is model_dir "
                "the same shared directory on every task? (A network file system's client "
                f"cache may hide new files: see {storage.describe()} in the shared storage "
                "guide)")
        sleep(poll_secs)
