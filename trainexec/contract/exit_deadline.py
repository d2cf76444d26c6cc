"""A bound on how long a cluster task takes to end once its role is over.

A task's role can be over while the process stays: TensorFlow's shutdown waits for
peers that have left (a MultiWorkerMirroredStrategy task's coordination service, a
collective), or a thread it started never returns. Nothing the task does then can
change the job's result, yet a pod that does not end holds its node and, under a
TFJob's success policy, can hold the job.

`end_within_at_exit(secs, code)` bounds that: when the interpreter begins to shut down
(after the user's program has returned: its own work after `train_and_evaluate` is
not limited), a daemon thread starts a clock; if the process is still alive `secs`
later, it logs where every thread is and ends the process with `code` (`os._exit`: the
code the process was ending with). Where that thread cannot run (TensorFlow's C++
shutdown holding the interpreter's lock, as when its coordination service waits for a
peer that has left, or for as long as its heartbeat fails), a watchdog process
outside the interpreter (`trainexec.contract.exit_watchdog`) ends it with SIGKILL
`OUTSIDE_MARGIN_SECS` (3 s) later: 137, retried, and its restart ends at once since
training is complete (`trainexec launch`, which the watchdog tells, counts the code it
was ending with). `end_within(..., backstop=True)` adds the kernel's SIGALRM
`BACKSTOP_SECS` later, for a deadline whose code is retryable anyway (a preempted
task's save: `trainexec.keras.faults.preemption`).

`TRAINEXEC_EXIT_DEADLINE_SECS` changes the bound (default `DEFAULT_SECS`; 0 turns it
off). The executor arms it for every task of a cluster (`trainexec.executor`) and the
exit hook for an error's exit (`trainexec.contract.exit_codes`).

Example:
    ```python
    end_within_at_exit(DEFAULT_SECS, code=0)  # once the role returned
    ```
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from typing import Callable, Mapping

from trainexec.contract.exit_watchdog import watch_from_outside
from trainexec.env_settings import seconds_setting

__all__ = ["BACKSTOP_SECS", "DEFAULT_SECS", "ENV_VAR", "OUTSIDE_MARGIN_SECS", "ExitDeadline",
           "deadline_secs",
           "disable_in_this_process", "end_within", "end_within_at_exit"]

logger = logging.getLogger(__name__)

ENV_VAR = "TRAINEXEC_EXIT_DEADLINE_SECS"
DEFAULT_SECS = 5.0  # as long as a peer may linger once the chief finished (peer_watchdog)
BACKSTOP_SECS = 5.0
# How long after the deadline the watchdog outside the interpreter ends a task whose
# deadline thread could not run (`trainexec.contract.exit_watchdog`). Time enough for
# that thread to log and exit when it can run at all; a hold of TensorFlow's shutdown
# that lasted past the deadline lasted past 15 s in every run of the chaos bed where it
# came (10 of 10, chief and workers alike), so waiting longer only made the task, and
# its restart (a few seconds of importing TensorFlow), end past the 20 s bound.
OUTSIDE_MARGIN_SECS = 3.0


def deadline_secs(environ: Mapping[str, str] | None = None) -> float:
    """The bound: `TRAINEXEC_EXIT_DEADLINE_SECS`, else `DEFAULT_SECS` (0: none)."""
    return seconds_setting(ENV_VAR, DEFAULT_SECS, "how long a cluster task may take to "
                           "end once its role is over; 0 turns the bound off", environ)


class ExitDeadline:
    """Ends this process with `code` if it is still alive `secs` after `start()`."""

    def __init__(self, secs: float, code: int, task: str = "this task",
                 exit_fn: Callable[[int], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 alarm: Callable[[int], object] | None = None,
                 since: str = "its role was over", backstop: bool = False,
                 watch: Callable[[float, str, int], object] | None = watch_from_outside
                 ) -> None:
        self.secs = secs
        self.code = code
        self.task = task
        self.since = since
        self.backstop = backstop
        self._exit = exit_fn or os._exit
        self._sleep = sleep
        self._alarm = alarm if alarm is not None else _kernel_alarm
        self._watch = watch
        self.fired = False

    def start(self) -> "ExitDeadline":
        if self.backstop:
            self._alarm(int(self.secs + BACKSTOP_SECS + 0.999))
        elif self._watch is not None:  # where this thread cannot run: from outside
            self._watch(self.secs + OUTSIDE_MARGIN_SECS, self.task, self.code)
        threading.Thread(target=self.run, name="trainexec-exit-deadline",
                         daemon=True).start()
        return self

    def run(self) -> None:
        self._sleep(self.secs)
        self.fired = True
        try:
            logger.warning("%s is still running %.0fs after %s (its threads' stacks "
                           "follow on stderr): exiting %s now",
                           self.task, self.secs, self.since, self.code)
            for handler in logging.getLogger().handlers:
                handler.flush()
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - a closed stream must not keep us alive
            pass
        finally:
            self._exit(self.code)


def _kernel_alarm(secs: int) -> None:
    """SIGALRM's default action (end the process) `secs` from now, from the main
    thread (the only one that may set signal handlers)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(max(secs, 1))


def end_within(secs: float, code: int, task: str = "this task",
               since: str = "its role was over",
               backstop: bool = False) -> ExitDeadline | None:
    """Starts the deadline now (None when `secs` is 0: no bound); `since` says what
    started it, for the log line; `backstop`: SIGALRM too (see the module doc)."""
    if secs <= 0 or _disabled:
        return None
    return ExitDeadline(secs, code, task, since=since, backstop=backstop).start()


_armed: dict[str, tuple[float, int, str]] = {}
_disabled: list[bool] = []


def disable_in_this_process() -> None:
    """No deadline at this process's exit: for a process that runs roles in-process
    and ends with a code of its own (a test runner), which the deadline would not know.
    Its child processes are not affected."""
    _disabled.append(True)


def end_within_at_exit(secs: float, code: int, task: str = "this task") -> None:
    """Starts the deadline when the interpreter begins to shut down (see the module
    doc); a later call replaces the code (the one the process ends with)."""
    if secs <= 0 or _disabled:
        return
    first = not _armed
    _armed["deadline"] = (secs, code, task)
    if first:
        _at_shutdown(lambda: end_within(*_armed["deadline"]))


def _at_shutdown(fn: Callable[[], object]) -> None:
    """Runs `fn` when the interpreter begins to shut down, before it waits for the
    program's other threads (`threading._register_atexit`, the one private name this
    module uses, as `concurrent.futures` does); `atexit` where it is missing."""
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        try:
            register(fn)
            return
        except RuntimeError:  # already shutting down
            fn()
            return
    import atexit

    atexit.register(fn)
