"""A task's own background calls into TensorFlow, waited for when the program ends.

trainexec's daemon threads call TensorFlow while the task runs: the peer watchdog
reads the finished-task records, the storage watch looks at `model_dir`, the ps-link
check reaches each worker. On object storage such a call can stay inside TensorFlow's
C++ for seconds (its GCS client retries a 429 or a 503 with a back-off). If the program
ends meanwhile and the call returns after the interpreter has begun to finalize, Python
ends that thread by unwinding it through TensorFlow's C++ frames, which do not let the
unwinding through: the process aborts (`terminate called after throwing an instance of
''`, `FATAL: exception not rethrown`, exit 134), a task whose role was over ends as a
crash, and an orchestrator restarts it. Seen in 3 of 8 runs of a trainexec.estimator
job through a 429 burst on gs://; made to happen at will by a thread whose gs:// read
returns just after the program ended (8 of 8 aborted).

So each such call runs inside `tensorflow_call()`. When the interpreter begins to shut
down (`atexit`: after the program's own code and its other threads, before finalizing)
it waits for the calls in flight to return, for at most `WAIT_SECS`; a thread that
would start a new one then waits for the process to end instead. A task of a cluster
has its exit deadline running by then (`trainexec.contract.exit_deadline`), which ends
the process with its own code if a call outlasts it; so the wait never holds a task
past its deadline.

Example:
    ```python
    with tensorflow_call():
        tf.io.gfile.exists(model_dir)  # from a daemon thread
    ```
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from typing import Iterator

__all__ = ["WAIT_SECS", "calls_in_flight", "ending", "stop_new_calls", "tensorflow_call",
           "wait_for_calls"]

# At most this long the end of the program waits for calls in flight, when no exit
# deadline ends it first (a local run, or TRAINEXEC_EXIT_DEADLINE_SECS=0).
WAIT_SECS = 10.0

_changed = threading.Condition()
_in_flight = 0
_ending = threading.Event()


@contextlib.contextmanager
def tensorflow_call() -> Iterator[None]:
    """Marks a call into TensorFlow from a daemon thread, which the program's end waits
    for (see the module doc). Once the program is ending, a new call does not start: the
    thread waits for the process to end (never call it from the main thread then)."""
    global _in_flight
    with _changed:  # the check and the count together: the end cannot slip between
        ending = _ending.is_set()
        if not ending:
            _in_flight += 1
    if ending:
        threading.Event().wait()  # never set: the process ends around this thread
    try:
        yield
    finally:
        with _changed:
            _in_flight -= 1
            _changed.notify_all()


def calls_in_flight() -> int:
    with _changed:
        return _in_flight


def ending() -> bool:
    """The program is ending: no new call starts (a watch should stop looking)."""
    return _ending.is_set()


def stop_new_calls() -> None:
    """No new call starts from now on; those in flight are not waited for (an exit by
    `os._exit`, which does not finalize the interpreter, has nothing to fear from them)."""
    with _changed:
        _ending.set()
    atexit.unregister(wait_for_calls)


def wait_for_calls(secs: float = WAIT_SECS) -> bool:
    """No new call starts, and the calls in flight are waited for, up to `secs`; True
    when none is left (what `atexit` runs)."""
    deadline = time.monotonic() + secs
    with _changed:
        _ending.set()
        while _in_flight:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _changed.wait(left)
    return True


# At import: the end then marks the program ending even if no call ever started, so
# that none can start while the interpreter finalizes.
atexit.register(wait_for_calls)
