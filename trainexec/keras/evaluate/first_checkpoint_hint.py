"""The hint a `SidecarEvaluator` logs while no checkpoint has appeared.

An evaluator that sees no checkpoint at all for a while is usually watching the
wrong directory, or training saves in a form it does not read. After
`FIRST_CHECKPOINT_HINT_SECS` (30 s, as `tf.keras.utils.SidecarEvaluator`) without
one, `HintingWaiter` logs once what it looks for and where: the checkpoint forms
trainexec reads (`trainexec.records.checkpoints`). It wraps the loop's `Waiter` and
measures the wait on the loop's `Clock`, so tests step a fake clock instead of
sleeping.

Example:
    ```python
    waiter = HintingWaiter(waiter_for(ckpt_dir, clock), clock, ckpt_dir,
                           has_checkpoint=lambda: target.latest_checkpoint() is not None)
    ```
"""

from __future__ import annotations

import logging
from typing import Callable

from trainexec.clock import Clock
from trainexec.evaluation.watch import Waiter

__all__ = ["FIRST_CHECKPOINT_HINT_SECS", "HintingWaiter", "first_checkpoint_hint"]

logger = logging.getLogger(__name__)

FIRST_CHECKPOINT_HINT_SECS = 30.0


def first_checkpoint_hint(checkpoint_dir: str, waited_secs: float) -> str:
    """What to tell a user whose evaluator has found no checkpoint in `waited_secs`."""
    return (
        f"No checkpoints appear to be found after {waited_secs:.0f} seconds in "
        f"{checkpoint_dir}. Is it the directory training saves to? The evaluator reads "
        "TensorFlow checkpoints of tf.train.Checkpoint(model=model, optimizer=optimizer) "
        "(a tf.train.CheckpointManager's ckpt-N), files of "
        "tf.keras.callbacks.ModelCheckpoint named with a number "
        "('ckpt-{epoch}.weights.h5' with save_weights_only=True, or whole models "
        "'ckpt-{epoch}.keras') and, on Keras 2, TensorFlow-format weights "
        "(ModelCheckpoint('ckpt-{epoch}', save_weights_only=True)); see "
        "trainexec.SidecarEvaluator's documentation.")


class HintingWaiter:
    """A `Waiter` that logs `first_checkpoint_hint` once, `after_secs` after it was
    made, if `has_checkpoint()` is still False then.

    Until the hint is due a wait is cut short at that moment (the loop then just
    looks again); once a checkpoint has been seen or the hint logged, waits pass
    through unchanged and `has_checkpoint` is no longer called.
    """

    def __init__(self, inner: Waiter, clock: Clock, checkpoint_dir: str,
                 has_checkpoint: Callable[[], bool],
                 after_secs: float = FIRST_CHECKPOINT_HINT_SECS) -> None:
        self._inner = inner
        self._clock = clock
        self._checkpoint_dir = checkpoint_dir
        self._has_checkpoint = has_checkpoint
        self._started = clock.now()
        self._due = self._started + after_secs
        self._settled = False  # a checkpoint was seen, or the hint logged

    def wait(self, secs: float) -> None:
        if not self._settled:
            now = self._clock.now()
            if self._has_checkpoint():
                self._settled = True
            elif now >= self._due:
                self._settled = True
                logger.info("%s", first_checkpoint_hint(self._checkpoint_dir,
                                                        now - self._started))
            else:
                secs = min(secs, self._due - now)
        self._inner.wait(secs)

    def close(self) -> None:
        self._inner.close()
