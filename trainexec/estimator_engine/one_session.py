"""One session per run for a task whose group trains in step (MultiWorkerMirroredStrategy
in a cluster), and the error that ended it.

A `MonitoredSession` answers an `UnavailableError` or `AbortedError` by closing its
session, creating a new one and running again, for ever: right when a lone parameter
server restarted, wrong when a peer of a collective was killed mid-step ("Collective
ops is aborted by: Connection reset by peer"), since the group's other members cannot
re-form the collective with a restarted peer, and spin. So `OneSession` creates the
first session only and refuses the second with `PeerLostError`, which ends the task as
a lost peer (exit 170): the whole group restarts and resumes from the last checkpoint,
as a Keras group does.

A failed step is not always a lost peer: a save on `gs://` that TensorFlow's client
gave up on is an `UnavailableError` too, and so is a restore that cannot read
`model_dir` when the first session is created. The refusal is therefore raised *from*
the error that made the session go: the one its first creation raised, or the one
`MonitoredSession` logged as it dropped the session (TensorFlow logs it, as the
argument of its INFO line "An error was raised...", on the `tensorflow` logger, which
`recording()` listens to, showing no line the logger's level did not show before). The exit-code contract reads that chain
(`trainexec.contract.exit_codes.classify`): a storage error ends the task with the
storage's code and words, anything else as a lost peer, as before.

Example:
    ```python
    creator = OneSession(ChiefSessionCreator(...), "worker:1")
    with creator.recording(), tf.compat.v1.train.MonitoredSession(
            session_creator=creator, hooks=hooks) as session:
        ...
    ```
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator

from trainexec.errors import PeerLostError

__all__ = ["TENSORFLOW_LOGGER", "OneSession"]

TENSORFLOW_LOGGER = "tensorflow"  # where tf.compat.v1.logging writes (tf_logging)


class OneSession:
    """A session creator that creates one session only (module doc); the creator's
    other attributes (`resumed_from_cluster_step`, ...) are its own."""

    def __init__(self, creator: Any, task: str) -> None:
        self._creator = creator
        self._task = task
        self._created = False
        self.last_error: BaseException | None = None  # what made the session go

    def create_session(self) -> Any:
        if self._created:
            cause = self.last_error
            said = "" if cause is None else (
                f": {type(cause).__name__}: {str(cause).strip().splitlines()[0][:300]}"
                if str(cause).strip() else f": {type(cause).__name__}")
            raise PeerLostError(
                f"{self._task}: a step of the MultiWorkerMirroredStrategy group failed "
                f"(see the error above{said}); the group restarts together from the "
                "last checkpoint") from cause
        self._created = True
        try:
            return self._creator.create_session()
        except Exception as err:  # MonitoredSession may ask again: the refusal says why
            self.last_error = err
            raise

    @contextlib.contextmanager
    def recording(self) -> Iterator["OneSession"]:
        """Listens, while it lasts, for the error `MonitoredSession` logs as it drops a
        session (module doc)."""
        tensorflow_logger = logging.getLogger(TENSORFLOW_LOGGER)
        level = tensorflow_logger.level
        # The line is INFO, below TensorFlow's default level (WARNING): let INFO lines
        # reach the listener, which passes on only what the level let through before.
        listener = _ErrorsLogged(self, shown_from=tensorflow_logger.getEffectiveLevel())
        tensorflow_logger.addFilter(listener)
        if tensorflow_logger.getEffectiveLevel() > logging.INFO:
            tensorflow_logger.setLevel(logging.INFO)
        try:
            yield self
        finally:
            tensorflow_logger.setLevel(level)
            tensorflow_logger.removeFilter(listener)

    def __getattr__(self, name: str) -> Any:  # the creator's own (resumed_from_...)
        return getattr(self._creator, name)


class _ErrorsLogged(logging.Filter):
    """Keeps the last exception a `tensorflow` log line carried as an argument; lets
    through the lines at `shown_from` or above (what the logger's level showed)."""

    def __init__(self, one: OneSession, shown_from: int) -> None:
        super().__init__()
        self._one = one
        self._shown_from = shown_from

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else (record.args,)
        for arg in args:
            if isinstance(arg, BaseException):
                self._one.last_error = arg
        return record.levelno >= self._shown_from
