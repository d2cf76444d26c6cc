"""The `SessionManager.__init__` patch behind `model_readiness_checks_every`.

| attribute or patch | seen on | when it is missing |
| --- | --- | --- |
| `tensorflow.python.training.session_manager.SessionManager.__init__` replaced process-wide (a wrapper defaulting `recovery_wait_secs`) | 2.15 (also present on 2.21, where no Estimator runs) | `patch_recovery_wait_secs` returns None (logged at debug): workers keep TensorFlow's 30 s re-check |
| its parameter `recovery_wait_secs` | 2.15 | the same |

`trainexec.estimator_trainer.readiness` decides when the patch is on (while any
`model_readiness_checks_every` block is active) and filters TensorFlow's log line; this
module only installs and removes it.

Example:
    ```python
    restore = patch_recovery_wait_secs(1.0)
    if restore is not None:
        ...  # SessionManagers created now re-check every second
        restore()
    ```
"""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Callable

from trainexec.internals import LINE_TF_2_15, PARAMETER, Internal

__all__ = ["INTERNALS", "patch_recovery_wait_secs"]

logger = logging.getLogger(__name__)

_OWNER = "tensorflow.python.training.session_manager.SessionManager"
_NO_PATCH = "model_readiness_checks_every does nothing: workers keep TensorFlow's 30 s re-check"

INTERNALS = (
    Internal(owner=_OWNER, attribute="__init__", lines=(LINE_TF_2_15,),
             when_missing=_NO_PATCH),
    Internal(owner=f"{_OWNER}.__init__", attribute="recovery_wait_secs",
             lines=(LINE_TF_2_15,), when_missing=_NO_PATCH, kind=PARAMETER),
)


def patch_recovery_wait_secs(secs: float) -> Callable[[], None] | None:
    """Makes every `SessionManager` created from now on default `recovery_wait_secs`
    to `secs` (unless its creator passes one); returns the function that puts
    TensorFlow's `__init__` back, or None (logged) when there is no SessionManager
    with that parameter to patch."""
    try:
        from tensorflow.python.training import session_manager
        owner = session_manager.SessionManager
        original = owner.__init__
        # Where recovery_wait_secs sits among the arguments after `self`.
        position = list(inspect.signature(original).parameters).index(
            "recovery_wait_secs") - 1
    except (ImportError, AttributeError, ValueError):  # no TF1 sessions
        logger.debug("SessionManager not found; readiness checks keep TF's interval")
        return None

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        if len(args) <= position:
            kwargs.setdefault("recovery_wait_secs", secs)
        original(self, *args, **kwargs)

    owner.__init__ = init

    def restore() -> None:
        owner.__init__ = original

    return restore
