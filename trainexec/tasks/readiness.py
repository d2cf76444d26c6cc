"""How often a non-chief worker re-checks that the chief has initialized the model.

A worker's `MonitoredTrainingSession` waits for the chief to initialize (or
restore) the variables on the ps. TensorFlow re-checks every 30 seconds, a
constant that neither `RunConfig` nor `Estimator.train` exposes. A worker
that reaches that check one moment before the chief is ready (a chief pod
scheduled late, a slow import on a busy machine) therefore sits idle for 30
seconds, and in a short run it misses training altogether.

`model_readiness_checks_every(secs)` makes every `SessionManager` created in
its block re-check every `secs` instead, unless its creator chose a value.
It changes nothing else and restores TensorFlow's default on exit.

Example::

    with model_readiness_checks_every(1.0):
        estimator.train(input_fn, max_steps=1000)
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from typing import Iterator

__all__ = ["model_readiness_checks_every"]

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def model_readiness_checks_every(secs: float) -> Iterator[None]:
    """Within the block, new SessionManagers re-check model readiness every `secs`."""
    if secs <= 0:
        raise ValueError(f"secs is {secs!r}: expected a number of seconds > 0")
    try:
        from tensorflow.python.training import session_manager
        original = session_manager.SessionManager.__init__
        # Where recovery_wait_secs sits among the arguments after `self`.
        position = list(inspect.signature(original).parameters).index("recovery_wait_secs") - 1
    except (ImportError, AttributeError, ValueError):  # a TensorFlow without TF1 sessions
        logger.debug("SessionManager not found; readiness checks keep TF's interval")
        yield
        return

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        if len(args) <= position:
            kwargs.setdefault("recovery_wait_secs", secs)
        original(self, *args, **kwargs)

    session_manager.SessionManager.__init__ = init
    try:
        yield
    finally:
        session_manager.SessionManager.__init__ = original
