"""SidecarEvaluators of the toy model (sidecar_programs/toy.py) for the sidecar tests, and
what they write: `sidecar()` builds one, `metrics_log()` reads its metrics log and
`names()` the checkpoints named there. STEPS_PER_EPOCH is the steps of one epoch of the
toy's training programs, and the step of each checkpoint the tests' trainer writes.
"""

import json
import os

from fakes import FakeClock
from sidecar_programs import toy
from trainexec.records.checkpoints import checkpoint_step
from trainexec.keras.evaluate.sidecar import METRICS_FILE, SidecarEvaluator

__all__ = ["STEPS_PER_EPOCH", "metrics_log", "names", "sidecar"]

STEPS_PER_EPOCH = 8


def sidecar(directory, clock="fake", **kwargs):
    """A SidecarEvaluator of the toy model; `clock=None` is the real clock."""
    kwargs.setdefault("verbose", 0)
    return SidecarEvaluator(toy.build_model(), toy.dataset(), str(directory),
                            clock=FakeClock(0.0) if clock == "fake" else clock, **kwargs)


def metrics_log(directory):
    with open(os.path.join(directory, METRICS_FILE)) as f:
        return [json.loads(line) for line in f]


def names(lines):
    """Checkpoint names without the file suffix: `ckpt-3` for `ckpt-3.weights.h5`."""
    return [f"ckpt-{checkpoint_step(line['checkpoint'])}" for line in lines]
