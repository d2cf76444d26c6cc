"""Errors that come from the storage `model_dir` is on, told apart from the rest.

A task reads and writes `model_dir` on a local disk, a network file system or object
storage (`gs://`). When that storage fails, the task's error is the storage's, not the
program's and not a peer's, and whether a restart helps depends on the storage:

| kind | examples | what to do |
| --- | --- | --- |
| transient (`storage_unavailable`, retryable) | an object store's 429 / 500 / 502 / 503 / 504 / 408 / 410 after its client's retries, a connection refused, reset or timed out; `EIO`, `ESTALE`, `ETIMEDOUT` from a network file system (also TensorFlow's "`<dir>` is not a directory" of a directory it could not stat) | nothing: a restart resumes from the last whole checkpoint |
| permanent (`storage_failed`, permanent) | `ENOSPC` (a full disk), `EDQUOT` (a quota), `EROFS` (mounted read-only), `EACCES` / HTTP 401 / 403 (no permission), a bucket that does not exist | free space, raise the quota, fix the mount or the permission, then resubmit: the last whole checkpoint is kept |

`storage_fault(error)` reads an exception (and what it was raised from): a TensorFlow
file-system error by its message (TensorFlow folds the errno and the HTTP status into
it: `...; No space left on device`, `HTTP response code 503`), an `OSError` by its
errno, a `google-cloud-storage` error (the evaluator lease) by its HTTP status; it
returns the `StorageFault` (which kind, the path, the operation) or None.

Example:
    ```python
    fault = storage_fault(error)       # StorageFault(kind="failed", path="/m/ckpt-300_temp",
    if fault is not None:              #              operation="SaveV2", ...)
        logger.error(fault.describe())
    ```
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import stat
import threading
from typing import Callable

__all__ = ["FAILED", "UNAVAILABLE", "StorageFault", "is_tensorflow_error", "storage_fault"]

UNAVAILABLE, FAILED = "unavailable", "failed"

_TRANSIENT_ERRNOS = {errno.EIO: "Input/output error", errno.ESTALE: "Stale file handle",
                     errno.ETIMEDOUT: "Connection timed out",
                     errno.ECONNRESET: "Connection reset by peer",
                     errno.ECONNREFUSED: "Connection refused",
                     errno.EHOSTUNREACH: "No route to host"}
_PERMANENT_ERRNOS = {errno.ENOSPC: "No space left on device",
                     errno.EDQUOT: "Disk quota exceeded",
                     errno.EROFS: "Read-only file system",
                     errno.EACCES: "Permission denied"}
_TRANSIENT_STATUS = {408, 410, 429, 500, 502, 503, 504}
_PERMANENT_STATUS = {401, 403}
# How TensorFlow's file systems word them.
_HTTP_STATUS = re.compile(r"(?:HTTP response code|response code|status(?: code)?:?)\s*(\d{3})",
                          re.I)
_CONNECTION_WORDS = ("couldn't connect to server", "could not resolve host",
                     "connection refused", "connection reset", "connection timed out",
                     "timeout was reached", "operation timed out", "failure when receiving",
                     "server returned nothing", "send failure", "recv failure",
                     "ssl connect error", "error executing an http request")
_MISSING_BUCKET = ("bucket does not exist", "bucket not found", "nosuchbucket",
                   "the specified bucket")
# A URL, or a local absolute path (not a TensorFlow device name: /job:worker/...).
_URL = re.compile(r"((?:gs|s3|hdfs)://[^\s'\",;)]+)")
_LOCAL_PATH = re.compile(r"(?<![\w:/])(/(?!job:)[^\s'\",;:)]+)")
_FILE_SYSTEM_WORDS = ("Input/output error", "Stale file handle")
# A shard of a checkpoint being written (`ckpt-200_temp/part-00000-of-00002`) gone before
# the save merged it: the save was cut short, or another save of the same step was in
# flight (a ParameterServerStrategy chief restarted while the ps still ran the last
# one's merge); a restart saves it anew.
_TEMP_SHARD = re.compile(r"_temp[/\\]part-\d+-of-\d+")
_GONE_WORDS = ("not found", "did not exist", "no such file")
SHARD_GONE = "a shard of the checkpoint being saved was gone before the save merged it"
# TensorFlow's RecursivelyCreateDir says "<dir> is not a directory" of a directory it
# could not stat (a network file system's ESTALE or EIO folded away: the chaos row
# estimator-nfs-storage, a tf.estimator chief's meta-graph write at stop 59's CI).
# The path starts the message or follows a space or a quote (not `./model`, whose
# "/model" is another directory); a relative one is not matched and stays the program's.
# On gs:// TensorFlow strips the scheme and bucket ("/model/eval is not a directory"):
# the local look-up then finds nothing there, and the error stays the program's too.
_NOT_A_DIRECTORY = re.compile(r"(?:^|(?<=[\s'\"]))(/(?!job:)[^\s'\",;:)]+) is not a directory")
LOOKUP_FAILED = "a look-up of the directory failed for a while"
# How long the look-up of such a directory may take: a hard-mounted NFS whose server is
# gone blocks it, and the task must still end (an unanswered look-up is transient).
LOOKUP_SECS = 5.0

_RESTART = "a restart resumes from the last whole checkpoint"
_RESUBMIT = "then resubmit the job: the last whole checkpoint is kept"
_FIX = {  # what to do, by the permanent fault's reason
    "No space left on device": "free space on the file system that holds it (or give "
                               "model_dir a larger volume)",
    "Disk quota exceeded": "raise the quota, or delete old checkpoints and exports",
    "Read-only file system": "mount it read-write in every task",
    "Permission denied": "give the task's user write access to it",
    "the bucket does not exist": "create the bucket, or correct model_dir",
}


def _advice(kind: str, reason: str) -> str:
    if reason == SHARD_GONE:
        return f"a save cut short, or another save of the same step; {_RESTART}"
    if reason == LOOKUP_FAILED:
        return (f"TensorFlow could not look it up and called it no directory; "
                f"{_RESTART}")
    if kind == UNAVAILABLE:
        return f"the storage did not answer after its client's retries; {_RESTART}"
    fix = _FIX.get(reason) or ("give the task's account access to it (on GCS, e.g. "
                               "roles/storage.objectAdmin on the bucket)"
                               if reason.startswith("HTTP") else "fix the storage")
    return f"it will not recover by itself: {fix}, {_RESUBMIT}"


@dataclasses.dataclass(frozen=True)
class StorageFault:
    """A storage error: `kind` (UNAVAILABLE: transient, FAILED: permanent), what
    happened (`reason`), the `path` and `operation` when the error names them."""

    kind: str
    reason: str
    path: str | None = None
    operation: str | None = None

    @property
    def retryable(self) -> bool:
        return self.kind == UNAVAILABLE

    def describe(self) -> str:
        """`storage failed: No space left on device (SaveV2 of /m/ckpt-300_temp/...); it
        will not recover by itself: free space on the file system that holds it ...`"""
        where = " ".join(part for part in (
            self.operation and f"{self.operation} of" if self.path else self.operation,
            self.path) if part)
        return (f"storage {self.kind}: {self.reason}" + (f" ({where})" if where else "")
                + f"; {_advice(self.kind, self.reason)}")


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    link: BaseException | None = error
    while link is not None and link not in seen and len(seen) < 20:
        seen.append(link)
        link = link.__cause__ or link.__context__
    return seen


def storage_fault(error: BaseException) -> StorageFault | None:
    """The storage fault `error` (or an error it came from) is, or None (module doc)."""
    for link in _chain(error):
        fault = _one(link)
        if fault is not None:
            return fault
    return None


def _one(error: BaseException) -> StorageFault | None:
    if isinstance(error, OSError) and error.errno is not None:
        path = error.filename if isinstance(error.filename, str) else None
        if error.errno in _TRANSIENT_ERRNOS:
            return StorageFault(UNAVAILABLE, _TRANSIENT_ERRNOS[error.errno], path)
        if error.errno in _PERMANENT_ERRNOS:
            return StorageFault(FAILED, _PERMANENT_ERRNOS[error.errno], path)
    status = _http_status(error)
    if status is not None:
        return _by_status(status, error)
    if _is_client_connection_error(error):
        return StorageFault(UNAVAILABLE, "the storage's endpoint did not answer "
                            f"({type(error).__name__})")
    if is_tensorflow_error(error) or _raised_in_tensorflow(error):
        return _from_tensorflow(error)
    return None


def _raised_in_tensorflow(error: BaseException) -> bool:
    """A built-in error TensorFlow's own Python raised, e.g. the summary writer's
    `RuntimeError('<path>; No space left on device')` from its writer thread (chaos
    seed 84 of the storage rerun): where the traceback ends, the module is TensorFlow's."""
    traceback = error.__traceback__
    if traceback is None:
        return False
    while traceback.tb_next is not None:
        traceback = traceback.tb_next
    return str(traceback.tb_frame.f_globals.get("__name__", "")).startswith("tensorflow.")


def _http_status(error: BaseException) -> int | None:
    """A google-cloud-storage (google.api_core) error's HTTP status."""
    code = getattr(error, "code", None)
    module = type(error).__module__
    if isinstance(code, int) and module.startswith(("google.", "requests")):
        return code
    return None


# google-cloud-storage's transport errors (requests, urllib3, google-auth, api_core's
# retries given up), by the module and name of the error's class.
_CLIENT_ERRORS = {"requests.exceptions": ("ConnectionError", "Timeout", "ReadTimeout",
                                          "ConnectTimeout", "ChunkedEncodingError"),
                  "urllib3.exceptions": ("ProtocolError", "ReadTimeoutError",
                                         "NewConnectionError", "MaxRetryError"),
                  "google.auth.exceptions": ("TransportError",),
                  "google.api_core.exceptions": ("RetryError",)}


def _is_client_connection_error(error: BaseException) -> bool:
    return any(cls.__name__ in _CLIENT_ERRORS.get(cls.__module__, ())
               for cls in type(error).__mro__)


def _by_status(status: int, error: BaseException) -> StorageFault | None:
    text = str(error)
    match = _URL.search(text)  # an HTTP error names no local path
    path = match.group(1) if match else None
    if status in _TRANSIENT_STATUS:
        return StorageFault(UNAVAILABLE, f"HTTP {status}", path)
    if status in _PERMANENT_STATUS:
        return StorageFault(FAILED, f"HTTP {status} (no permission)", path)
    if status == 404 and any(words in text.lower() for words in _MISSING_BUCKET):
        return StorageFault(FAILED, "the bucket does not exist", path)
    return None


def _from_tensorflow(error: BaseException) -> StorageFault | None:
    text = str(error)
    lower = text.lower()
    operation = getattr(getattr(error, "op", None), "type", None)
    path = _path_in(text)
    url = _URL.search(text) is not None
    for words in _PERMANENT_ERRNOS.values():
        if words.lower() in lower and (path or words != "Permission denied"):
            return StorageFault(FAILED, words, path, operation)
    for words in _FILE_SYSTEM_WORDS:  # errno words only a file system says
        if words.lower() in lower and path:
            return StorageFault(UNAVAILABLE, words, path, operation)
    if any(words in lower for words in _MISSING_BUCKET):
        return StorageFault(FAILED, "the bucket does not exist", path, operation)
    if _TEMP_SHARD.search(text) and any(words in lower for words in _GONE_WORDS):
        return StorageFault(UNAVAILABLE, SHARD_GONE, path, operation)
    not_a_directory = _NOT_A_DIRECTORY.search(text)
    if not_a_directory and _a_directory_after_all(not_a_directory.group(1)):
        return StorageFault(UNAVAILABLE, LOOKUP_FAILED, not_a_directory.group(1), operation)
    match = _HTTP_STATUS.search(text)
    if match:
        status = int(match.group(1))
        if status in _TRANSIENT_STATUS:
            return StorageFault(UNAVAILABLE, f"HTTP {status}", path, operation)
        if status in _PERMANENT_STATUS:
            return StorageFault(FAILED, f"HTTP {status} (no permission)", path, operation)
    if url and any(words in lower for words in _CONNECTION_WORDS):
        return StorageFault(UNAVAILABLE, "the storage's endpoint did not answer", path,
                            operation)
    return None


def _a_directory_after_all(path: str, within_secs: float = LOOKUP_SECS,
                           look_up_fn: Callable[[str], os.stat_result] = os.stat) -> bool:
    """Whether `path`, which TensorFlow called no directory, is one now, or still cannot
    be looked up for a transient reason (an errno of `_TRANSIENT_ERRNOS`, or no answer
    within `within_secs`): then the error was the storage's, not a file where model_dir
    should be (which stays the program's error). `look_up_fn`: os.stat, or a test's."""
    answer: list[bool] = []

    def look_up() -> None:
        try:
            answer.append(stat.S_ISDIR(look_up_fn(path).st_mode))
        except OSError as err:
            answer.append(err.errno in _TRANSIENT_ERRNOS)

    looking = threading.Thread(target=look_up, name="trainexec-lookup", daemon=True)
    looking.start()
    looking.join(within_secs)
    return answer[0] if answer else True


def _path_in(text: str) -> str | None:
    match = _URL.search(text) or _LOCAL_PATH.search(text)
    return match.group(1).rstrip(".") if match else None


def is_tensorflow_error(error: BaseException) -> bool:
    """Whether `error` is one of TensorFlow's (its type or a base defined there)."""
    return any(cls.__module__.startswith("tensorflow") for cls in type(error).__mro__)
