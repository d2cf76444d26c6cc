"""One evaluator per evaluation state directory: a lease file, renewed while it runs.

Two evaluators writing the same state (what was evaluated, the best value so
far, the final export) would undo each other's work, so an evaluator takes
`<state dir>/evaluator_lease.json` before it starts and gives it back when it
stops. The state directory is the `SidecarEvaluator`'s `state_dir` (default:
its checkpoint directory) and `<model_dir>/trainexec/eval` (or
`eval_<EvalSpec.name>`) for the Estimator evaluator task, so evaluators of
different data sets (their own `state_dir` or `EvalSpec.name`) run side by
side. The file names its holder::

    {"what": "SidecarEvaluator of /ckpts", "owner": {"host": "eval-0", "pid": 7, ...},
     "started_at": 1763772000.5, "token": "3f2a...", "renewals": 12}

It is created exclusively and rewritten every `renew_secs` by a background
thread, each change only if the file is still what its writer last read
(`trainexec.evaluation.lease_store`: a hard link of a complete temporary file
on a local disk or NFS; generation preconditions on `gs://`, so that exactly
one of two evaluators started together holds it there too).
A second evaluator is refused (`EvaluatorAlreadyRunning`, naming host, pid and
start time) while the holder may be alive. It takes the lease over when the
holder is provably gone:

* on the same machine (host, boot, pid namespace and pod), its pid is not
  running, or belongs to a process that started later; or
* the lease was not renewed for `stale_secs`, by the file system's clock. A
  holder that cannot be checked (another host or container) and whose lease
  is not older than that is watched: refused as soon as it renews, taken over
  if it stays silent for the rest of `stale_secs`.

A holder whose lease was taken over (it stalled for longer than `stale_secs`)
finds out at its next renewal; `check()` (called before each evaluation by
`LeaseGuard`) then raises `EvaluatorLeaseLost`, so it stops before exporting.

Example:
    ```python
    with EvaluatorLease("/ckpts", what="SidecarEvaluator of /ckpts") as lease:
        ...   # evaluate; lease.check() raises if another evaluator took over
    ```
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import threading
import time
import uuid
from typing import Callable

import json

from trainexec.records.layout import file_system_now
from trainexec.evaluation.lease_store import Stored, lease_store
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.records.liveness import ALIVE, GONE, Owner

__all__ = [
    "LEASE_FILE",
    "EvaluatorAlreadyRunning",
    "EvaluatorLease",
    "EvaluatorLeaseLost",
    "LeaseGuard",
]

logger = logging.getLogger(__name__)

LEASE_FILE = "evaluator_lease.json"
RENEW_SECS = 10.0
STALE_SECS = 120.0

_HELD: set[str] = set()  # tokens of the leases this process holds
_HELD_LOCK = threading.Lock()


class EvaluatorAlreadyRunning(RuntimeError):
    """Another evaluator holds the lease of this evaluation state directory."""


class EvaluatorLeaseLost(RuntimeError):
    """This evaluator's lease was taken over while it ran (it had stalled)."""


@dataclasses.dataclass(frozen=True)
class _Lease:
    what: str
    owner: Owner
    started_at: float
    token: str
    renewals: int = 0

    @classmethod
    def parse(cls, data: dict) -> "_Lease":
        return cls(what=str(data["what"]), owner=Owner(**data["owner"]),
                   started_at=float(data["started_at"]), token=str(data["token"]),
                   renewals=int(data.get("renewals", 0)))

    def describe(self) -> str:
        started = datetime.datetime.fromtimestamp(self.started_at).astimezone()
        return (f"{self.what}, {self.owner.describe()}, started "
                f"{started.isoformat(sep=' ', timespec='seconds')}")


@dataclasses.dataclass(frozen=True)
class _Watch:
    """A lease whose holder cannot be checked, as first seen (monotonic time)."""

    token: str | None
    renewals: int | None
    mtime: float
    seen_at: float
    age: float


class EvaluatorLease:
    """The lease of one evaluation state directory (see the module doc).

    Args:
      directory: the evaluation state directory (a local path or a URL).
      what: names the evaluator in messages, e.g. "SidecarEvaluator of /ckpts".
      renew_secs: how often the holder rewrites the lease.
      stale_secs: a lease not renewed for this long is taken over.
      sleep: how the acquirer waits while it watches a holder (tests pass a
        fake).
    """

    def __init__(self, directory: str, what: str, *, renew_secs: float = RENEW_SECS,
                 stale_secs: float = STALE_SECS,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.directory = directory.rstrip("/")
        self.path = f"{self.directory}/{LEASE_FILE}"
        self.what = what
        self._renew_secs = renew_secs
        self._stale_secs = stale_secs
        self._sleep = sleep
        self._store = lease_store(self.path)
        self._lease: _Lease | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost: str | None = None

    # -- holding -------------------------------------------------------------------

    def acquire(self) -> "EvaluatorLease":
        """Takes the lease, or raises `EvaluatorAlreadyRunning` naming the holder."""
        import tensorflow as tf

        tf.io.gfile.makedirs(self.directory)
        lease = _Lease(self.what, Owner.current(), time.time(), uuid.uuid4().hex)
        with _HELD_LOCK:  # before it exists: another thread here must see it held
            _HELD.add(lease.token)
        try:
            self._take(lease)
        except BaseException:
            with _HELD_LOCK:
                _HELD.discard(lease.token)
            raise
        self._lease = lease
        self.lost = None
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew_loop, daemon=True,
                                        name=f"lease-renewal {self.path}")
        self._thread.start()
        logger.info("Holding the evaluator lease %s (%s)", self.path, lease.describe())
        return self

    def _take(self, lease: _Lease) -> None:
        watched: _Watch | None = None  # a holder that cannot be checked, watched
        while not self._store.create(_text(lease)):
            holder, stored = self._read()
            if stored is None:  # removed meanwhile: try again, after a pause, so that
                self._sleep(0.05)  # a store that never finds it cannot make this spin
                continue
            reason, watched = self._judge(holder, stored.mtime, watched)
            if reason is None:
                self._sleep(min(1.0, self._renew_secs / 4))
                continue
            logger.warning("Taking over the evaluator lease %s: %s", self.path, reason)
            self._store.delete(stored.version)  # unless renewed or replaced meanwhile

    def release(self) -> None:
        """Stops renewing and removes the lease if it is still this one's.

        A file system error is logged, not raised: the lease then expires after
        `stale_secs` (or at once, for an evaluator on this machine).
        """
        lease, self._lease = self._lease, None
        if lease is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, self._renew_secs))
        with _HELD_LOCK:
            _HELD.discard(lease.token)
        try:
            holder, stored = self._read()
            if holder is not None and holder.token == lease.token:
                assert stored is not None, "a holder is read from what is stored"
                if self._store.delete(stored.version):
                    logger.info("Released the evaluator lease %s", self.path)
        except Exception as err:  # the file system's or the storage client's
            logger.warning("Could not remove the evaluator lease %s: %s", self.path, err)

    def check(self) -> None:
        """Raises `EvaluatorLeaseLost` if another evaluator has taken the lease over."""
        if self.lost:
            raise EvaluatorLeaseLost(self.lost)

    def __enter__(self) -> "EvaluatorLease":
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()

    # -- the file ------------------------------------------------------------------

    def _read(self) -> tuple[_Lease | None, Stored | None]:
        """(lease, what is stored); (None, None) when there is none, (None,
        stored) when it cannot be parsed."""
        stored = self._store.read()
        if stored is None:
            return None, None
        try:
            return _Lease.parse(json.loads(stored.text)), stored
        except (KeyError, TypeError, ValueError):
            return None, stored

    def _judge(self, holder: _Lease | None, mtime: float,
               watched: "_Watch | None") -> tuple[str | None, "_Watch | None"]:
        """Why the holder is provably gone (None: not yet), and what is watched.

        Raises EvaluatorAlreadyRunning when the holder is, or may be, alive.
        """
        if holder is not None:
            with _HELD_LOCK:
                held_here = holder.token in _HELD
            if holder.owner.is_this_process():
                if not held_here:
                    return "this process wrote it and no longer holds it", None
                raise self._refusal(holder, "held in this same process")
            status, why = holder.owner.status()
            if status == GONE:
                return why, None
            if status == ALIVE:
                raise self._refusal(holder, why)
        token, renewals = (holder.token, holder.renewals) if holder else (None, None)
        if watched is None or watched.token != token:
            age = file_system_now(self.directory) - mtime
            if age >= self._stale_secs:
                return (f"not renewed for {age:.0f}s (more than {self._stale_secs:.0f}s)",
                        None)
            logger.warning(
                "The evaluator lease %s is held by %s, renewed %.0fs ago, which cannot be "
                "checked from here; waiting up to %.0fs for it to be renewed (then this "
                "evaluator stops) or to expire (then it takes over)", self.path,
                holder.describe() if holder else "an unreadable lease", age,
                self._stale_secs - age)
            return None, _Watch(token, renewals, mtime, time.monotonic(), age)
        if (renewals, mtime) != (watched.renewals, watched.mtime):
            raise self._refusal(holder, "it renewed its lease while this one waited")
        silent = watched.age + time.monotonic() - watched.seen_at
        if silent >= self._stale_secs:
            return f"not renewed for {silent:.0f}s (more than {self._stale_secs:.0f}s)", None
        return None, watched

    def _refusal(self, holder: _Lease | None, why: str) -> EvaluatorAlreadyRunning:
        who = holder.describe() if holder else "an evaluator"
        return EvaluatorAlreadyRunning(
            f"Another evaluator is already running on {self.directory}: {who} ({why}; "
            f"lease {self.path}). Only one evaluator may use an evaluation state "
            "directory: stop that one first, or give this one its own (SidecarEvaluator("
            "state_dir=...), or another EvalSpec(name=...)). The lease is taken over "
            f"by itself once that process is gone, or after {self._stale_secs:.0f}s "
            "without renewal.")

    def _renew_loop(self) -> None:
        lease = self._lease
        while lease is not None and not self._stop.wait(self._renew_secs):
            try:
                holder, stored = self._read()
                if holder is None or holder.token != lease.token:
                    how = (f"to {holder.describe()}, which took it over (this one had not "
                           f"renewed it for {self._stale_secs:.0f}s)" if holder else
                           "(its file was removed)")
                    self.lost = (f"{lease.what} lost its evaluator lease {self.path} {how}; "
                                 "stopping, so that only one evaluator evaluates and exports")
                    logger.error("%s", self.lost)
                    return
                assert stored is not None, "a holder is read from what is stored"
                lease = dataclasses.replace(lease, renewals=lease.renewals + 1)
                if not self._store.replace(_text(lease), stored.version):
                    continue  # changed since it was read: the next look tells how
            except Exception as err:  # keep trying: a file system hiccup is not fatal
                logger.warning("Could not renew the evaluator lease %s: %s", self.path, err)


def _text(lease: _Lease) -> str:
    return json.dumps(dataclasses.asdict(lease), sort_keys=True)


class LeaseGuard(ContinuousEvalListener):
    """Stops the loop before an evaluation if the lease was taken over."""

    def __init__(self, lease: EvaluatorLease) -> None:
        self._lease = lease

    def before_eval(self) -> bool:
        self._lease.check()
        return True
