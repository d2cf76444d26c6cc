"""The exit-code contract: every way a trainexec task ends maps to one code.

Orchestrators decide from a task's exit code whether to restart it. Kubeflow's
TFJob with `restartPolicy: ExitCode` (and trainexec's launcher) treat 1-127 as
permanent (the job fails) and 128-255 as retryable (the pod is restarted), so:

| code | cause | restart? | when |
| --- | --- | --- | --- |
| 0 | `done` | no | the role finished |
| 1 | `user_error` | no | the user's code raised: a restart repeats it |
| 2 | `config_error` | no | a bad `TF_CONFIG`, a `ConfigError`: fix and resubmit |
| 143 | `preempted` | yes | SIGTERM (128 + 15): a checkpoint was saved, resume from it |
| 170 | `peer_lost` | yes | a peer task was lost, frozen or cut off |
| 171 | `server_unavailable` | yes | this task's TensorFlow server could not start |
| 172 | `storage_unavailable` | yes | `model_dir`'s storage failed for a while (an object store's 429/5xx after its client's retries, `EIO`, `ESTALE`) |
| 74 | `storage_failed` | no | `model_dir`'s storage will not recover by itself (`ENOSPC`, a quota, read-only, no permission, no bucket) |

A storage error is told from the rest by `trainexec.contract.storage_faults` (its
errno, HTTP status or TensorFlow's words for them), and the task's last line names the
path, the operation and what to do. The user's code is `build_model`, an `input_fn`, a
callback, an exporter. A peer
is lost on a collective or coordination-service error, a lost parameter server, a
peer unreachable. A server cannot start on a port still held by the task's
previous run, or a peer's address that does not resolve yet.

A platform with other conventions sets `TRAINEXEC_EXIT_CODES`, e.g.
`preempted=75,peer_lost=75`, in every task's environment (the launcher reads
it too). Any code of 128 or more, and death by a signal, also counts as
retryable: that is how a process killed by the kernel (137 after SIGKILL, an
out-of-memory kill) or by TensorFlow's own abort (134) ends.

`classify(error)` names the cause of an exception; `install_exit_hook(task)`
makes an uncaught exception end the process with its code (the exception
still propagates through the user's code unchanged, and its traceback is
printed first).

Example:
    ```python
    codes = ExitCodes.from_env()
    cause = classify(error)                   # "peer_lost"
    codes.code_for(cause), codes.is_retryable(codes.code_for(cause))   # 170, True
    ```
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import sys
from typing import Any, Callable, Mapping

from trainexec.contract.exit_deadline import DEFAULT_SECS as DEFAULT_DEADLINE_SECS
from trainexec.contract.exit_deadline import deadline_secs, end_within
from trainexec.contract.storage_faults import is_tensorflow_error, storage_fault
from trainexec.contract.tensorflow_calls import stop_new_calls
from trainexec.contract.termination import termination_requested
from trainexec.errors import ConfigError, PeerLostError

__all__ = [
    "CAUSES",
    "CONFIG_ERROR",
    "DONE",
    "ENV_VAR",
    "PEER_LOST",
    "PREEMPTED",
    "PREEMPTED_EXIT_CODE",
    "RETRYABLE_CAUSES",
    "SERVER_UNAVAILABLE",
    "STORAGE_FAILED",
    "STORAGE_UNAVAILABLE",
    "USER_ERROR",
    "ExitCodes",
    "ServerUnavailableError",
    "classify",
    "flush_logs",
    "install_exit_hook",
    "is_tensorflow_error",
]

logger = logging.getLogger(__name__)

ENV_VAR = "TRAINEXEC_EXIT_CODES"

DONE = "done"
USER_ERROR = "user_error"
CONFIG_ERROR = "config_error"
PREEMPTED = "preempted"
PEER_LOST = "peer_lost"
SERVER_UNAVAILABLE = "server_unavailable"
STORAGE_UNAVAILABLE = "storage_unavailable"
STORAGE_FAILED = "storage_failed"

CAUSES = (DONE, USER_ERROR, CONFIG_ERROR, PREEMPTED, PEER_LOST, SERVER_UNAVAILABLE,
          STORAGE_UNAVAILABLE, STORAGE_FAILED)
RETRYABLE_CAUSES = frozenset({PREEMPTED, PEER_LOST, SERVER_UNAVAILABLE, STORAGE_UNAVAILABLE})

# 74 is sysexits' EX_IOERR; 172 follows trainexec's other retryable codes.
_DEFAULTS = {DONE: 0, USER_ERROR: 1, CONFIG_ERROR: 2, PREEMPTED: 143, PEER_LOST: 170,
             SERVER_UNAVAILABLE: 171, STORAGE_UNAVAILABLE: 172, STORAGE_FAILED: 74}

# The default preemption code, for code that names it (trainexec before 0.2.0 used 75).
PREEMPTED_EXIT_CODE = _DEFAULTS[PREEMPTED]

_DESCRIPTIONS = {
    DONE: "the role finished",
    USER_ERROR: "the program raised an error a restart would repeat",
    CONFIG_ERROR: "the configuration is wrong (TF_CONFIG, an argument)",
    PREEMPTED: "preempted: a checkpoint was saved, a restart resumes from it",
    PEER_LOST: "a peer task was lost, frozen or cut off",
    SERVER_UNAVAILABLE: "this task's TensorFlow server could not start",
    STORAGE_UNAVAILABLE: "model_dir's storage failed for a while (a restart resumes)",
    STORAGE_FAILED: "model_dir's storage will not recover by itself (full, read-only, no "
                    "permission)",
}


class ServerUnavailableError(RuntimeError):
    """This task's TensorFlow server could not start (a restart may fix it)."""


@dataclasses.dataclass(frozen=True)
class ExitCodes:
    """The code of each cause; `from_env()` applies `TRAINEXEC_EXIT_CODES`."""

    codes: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: dict(_DEFAULTS))

    def __post_init__(self) -> None:
        object.__setattr__(self, "codes", dict(self.codes))

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.codes.items())))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "ExitCodes":
        """The defaults, with the overrides of `TRAINEXEC_EXIT_CODES`
        (`cause=code,...`); ConfigError naming the bad entry and the fix."""
        text = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
        codes = dict(_DEFAULTS)
        for entry in filter(None, (part.strip() for part in text.split(","))):
            cause, sep, value = entry.partition("=")
            cause = cause.strip()
            if not sep or cause not in _DEFAULTS or cause == DONE:
                raise ConfigError(
                    f"{ENV_VAR} entry {entry!r} must be CAUSE=CODE with CAUSE one of "
                    f"{', '.join(c for c in CAUSES if c != DONE)}, e.g. preempted=75")
            try:
                code = int(value)
            except ValueError:
                code = -1
            if not 1 <= code <= 255:
                raise ConfigError(f"{ENV_VAR} entry {entry!r}: the code must be a whole "
                                  "number from 1 to 255 (0 means success)")
            codes[cause] = code
        return cls(codes)

    def code_for(self, cause: str) -> int:
        return self.codes[cause]

    def is_retryable(self, code: int | None) -> bool:
        """Whether a task that ended with `code` should be restarted: a retryable
        cause's code, any code of 128 or more, or death by a signal (a negative
        `returncode`, as `subprocess` reports it)."""
        if code is None or code == 0:
            return False
        return (code < 0 or code >= 128
                or code in {self.codes[cause] for cause in RETRYABLE_CAUSES})

    def describe(self, code: int | None) -> str:
        """What `code` means under this contract, for logs and summaries."""
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by signal {-code} (retryable)"
        causes = [cause for cause in CAUSES if self.codes[cause] == code]
        what = "; or ".join(_DESCRIPTIONS[cause] for cause in causes)
        if not what:
            what = "killed by a signal or aborted" if code >= 128 else "an error"
        if code == 0:
            return what
        return f"{what} ({'retryable' if self.is_retryable(code) else 'permanent'})"


# TensorFlow errors that mean a peer is gone, frozen or cut off when they reach
# a task of a cluster: the coordination service and collectives report a lost
# peer as Unavailable, DeadlineExceeded, Aborted or Cancelled; a lost ps reaches
# the ParameterServerStrategy chief as Unavailable.
_PEER_ERROR_NAMES = ("UnavailableError", "DeadlineExceededError", "AbortedError",
                     "CancelledError")
# Words of TensorFlow messages that say the same when the type does not.
_PEER_WORDS = ("coordination service", "heartbeat", "collective ops is aborted",
               "failed to connect to all addresses", "socket closed", "connection reset",
               "ps failure", "worker failure", "task has been lost", "has been preempted",
               # a restarted ps no longer holds the tensors a step of the last one
               # referred to (an InvalidArgumentError; chaos seed 119)
               "unable to find the relevant tensor remote_handle",
               # a ps restarted under a step in flight (ABORTED inside an INTERNAL
               # error; chaos seed 76 of the storage rerun)
               "expects a different device incarnation", "was probably restarted")
# Words that say a peer is lost only in an error of this type whose message names a
# remote task (`/job:`): the same words from a user's own call (a py_function asking an
# HTTP API) are the program's error.
_PEER_WORDS_NAMING_A_TASK = {
    # a peer's gRPC server could not decode what this task sent it (TF 2.15's eager
    # client once sent a PSS worker a device name of garbage bytes, "contains invalid
    # UTF-8", answered INTERNAL): the exchange failed, not the program, and a restart
    # sends it whole
    "InternalError": ("unable to parse request",)}


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    link: BaseException | None = error
    while link is not None and link not in seen and len(seen) < 20:
        seen.append(link)
        link = link.__cause__ or link.__context__
    return seen


def classify(error: BaseException, in_cluster: bool = True,
             terminating: bool | None = None) -> str:
    """The cause (one of `CAUSES`) an exception that ends a task stands for.

    `SystemExit` is not classified here (its code is the code). Outside a
    cluster (`in_cluster=False`) no error is a lost peer. `terminating`: this
    process got SIGTERM (default: `trainexec.contract.termination` says so); an
    error it then runs into, other than a configuration error, ends it as
    preempted: the task is going away, and a restart resumes from its last save.
    """
    chain = _chain(error)
    if any(isinstance(e, ServerUnavailableError) for e in chain):
        return SERVER_UNAVAILABLE
    if any(isinstance(e, ConfigError) for e in chain):
        return CONFIG_ERROR
    fault = storage_fault(error)
    if fault is not None:
        return STORAGE_UNAVAILABLE if fault.retryable else STORAGE_FAILED
    if in_cluster:
        for e in chain:
            if _is_peer_error(e):
                return PEER_LOST
    if terminating is None:
        terminating = termination_requested()
    return PREEMPTED if terminating else USER_ERROR


def _is_peer_error(error: BaseException) -> bool:
    """trainexec's `PeerLostError`; a TensorFlow error that says a peer is gone: by type
    or by words; or a status
    TensorFlow's C++ side raised through pybind11, which arrives as a plain
    RuntimeError whose message starts with the status' name ("UnavailableError:
    Socket closed", from the coordination service)."""
    text = str(error)
    if isinstance(error, PeerLostError):
        return True
    if is_tensorflow_error(error):
        lowered = text.lower()
        return (type(error).__name__ in _PEER_ERROR_NAMES
                or any(words in lowered for words in _PEER_WORDS)
                or ("/job:" in lowered and any(
                    words in lowered
                    for words in _PEER_WORDS_NAMING_A_TASK.get(type(error).__name__, ()))))
    return (type(error) is RuntimeError
            and text.startswith(tuple(f"{name}:" for name in _PEER_ERROR_NAMES)))


_installed: dict[str, Any] = {}


def install_exit_hook(task: str, in_cluster: bool = True,
                      codes: ExitCodes | None = None,
                      exit_fn: Callable[[int], None] | None = None) -> None:
    """From now on an uncaught exception ends this process with the contract's
    code for it, after its traceback is printed and `atexit` handlers ran.

    Only the interpreter's last word changes: until then the exception goes
    through the user's code as it is. Installing again replaces the task name.
    Nothing is installed in an interactive session (a REPL, `python -i`).
    """
    if exit_fn is None and (hasattr(sys, "ps1") or sys.flags.interactive):
        return  # an interactive session: an uncaught error must not end it
    bad_setting = None
    if codes is None:
        try:
            codes = ExitCodes.from_env()
        except ConfigError as error:  # ends the task as a config error, with the
            codes, bad_setting = ExitCodes(), error  # default codes (2), once installed
    exit_fn = exit_fn or os._exit
    previous = _installed.get("previous") or sys.excepthook

    def hook(kind: type, error: BaseException, traceback: Any) -> None:
        previous(kind, error, traceback)
        if isinstance(error, SystemExit):
            return  # (never reaches an excepthook; for completeness)
        if isinstance(error, KeyboardInterrupt):
            code, cause = 130, "interrupted"
        else:
            cause = classify(error, in_cluster)
            code = codes.code_for(cause)
            if cause == PREEMPTED:
                logger.warning("%s got SIGTERM, then this error: it ends as preempted (a "
                               "restart resumes from the last checkpoint)", task)
            if cause in (STORAGE_UNAVAILABLE, STORAGE_FAILED):
                fault = storage_fault(error)
                if fault is not None:
                    logger.error("%s: %s", task, fault.describe())
        logger.error("%s exits %s: %s", task, code, codes.describe(code))
        flush_logs()
        if in_cluster:  # nothing this task still waits for may keep it from ending
            end_within(_deadline_or_default(), code, task)
        if exit_fn is os._exit:  # no finalizing: background calls need no waiting for
            stop_new_calls()
        atexit._run_exitfuncs()
        flush_logs()
        exit_fn(code)

    _installed["previous"] = previous
    sys.excepthook = hook
    if bad_setting is not None:
        raise bad_setting


def _deadline_or_default() -> float:
    try:
        return deadline_secs()
    except ConfigError:  # reported where the executor reads it
        return DEFAULT_DEADLINE_SECS


def flush_logs() -> None:
    """Flushes the root logger's handlers and the standard streams (before an os._exit)."""
    for handler in logging.getLogger().handlers:
        try:
            handler.flush()
        except Exception:  # a closed stream: nothing to flush
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
