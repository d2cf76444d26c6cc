"""Where a chaos run keeps `model_dir`, and how the runner reads it from outside the bed.

Three storages, each a class with the same small shape (`ChaosStorage`):

| name | the pods see | the runner reads | settles within |
| --- | --- | --- | --- |
| `local` | one directory of this machine (every host's mount namespace sees it) | that directory | `BOUND_SECS` |
| `nfs` | a per-host NFS-like view (`trainexec.testing.storage.SharedDir`, NFS's default caching) | the backing directory, behind no cache | `BOUND_SECS` + 60 s |
| `gs` | `gs://trainexec-test/model` through TensorFlow's own GCS client, against `trainexec.testing.gcs.GcsEmulator` on bed host "gcs" | the emulator's objects, from its files | `BOUND_SECS` + 5 s; an outage's end + 35 s |

`staleness_secs` (how late one host may see another's change: NFS's attribute and
lookup caches, TensorFlow's GCS stat cache) is the one number a storage adds to
the bound every pod must end within; it is written here once. `lingers_secs` (per
fault kind) is how long after a storage fault's end a pod may still be inside it;
the invariants count a fault's end from then (`AppliedFault.over`).

The runner never reads through the pods' caches: `files()` is a snapshot of
every file under `model_dir` with its size, taken from the backing directory or
the bucket, so what the invariants judge is what the storage holds.

Example:
    ```python
    storage = storage_for("gs", workdir)
    with TestBed(hosts + list(storage.extra_hosts), **storage.bed_options()) as bed, \\
            storage.started(bed):
        paths = storage.job_paths()
        ...
        storage.files()          # {"checkpoint": 211, "ckpt-100.index": 375, ...}
    ```
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import math
import os
import threading
from typing import Any, Iterator, Mapping, Protocol, Sequence, cast

__all__ = ["STORAGE_STALENESS_SECS", "ChaosStorage", "GcsStorage", "JobPaths", "LocalStorage",
           "NfsStorage", "drawn_details", "fault_setting", "storage_for"]

# How late a host may see another host's change on each storage, at worst: the
# NFS-like views' caches (trainexec.testing.storage.NFS_DEFAULTS: acregmax and acdirmax
# 60 s) and TensorFlow's GCS stat cache (GCS_STAT_CACHE_MAX_AGE, 5 s by default).
STORAGE_STALENESS_SECS = {"local": 0.0, "nfs": 60.0, "gs": 5.0}
# The NFS-like volume of a run with storage faults (a tmpfs a disk-full fault fills): far
# more than a demo job writes.
NFS_VOLUME_MB = 256


@dataclasses.dataclass(frozen=True)
class JobPaths:
    """Where the job's pods keep their files (as the pods see them) and what their
    environment needs for the storage."""

    model_dir: str
    result_file: str
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)


class ChaosStorage(Protocol):
    """Where one chaos run's model_dir lives (see the module doc)."""

    name: str
    staleness_secs: float
    # How long after a storage fault of each kind ends a pod may still be inside it.
    lingers_secs: Mapping[str, float]
    extra_hosts: Sequence[str]  # bed hosts of its own (the emulator's)

    def bed_options(self) -> Mapping[str, Any]: ...  # TestBed keywords
    def started(self, bed: Any) -> contextlib.AbstractContextManager: ...
    def job_paths(self) -> JobPaths: ...  # as the pods see them
    def files(self) -> dict[str, int]: ...  # relative name -> size, read outside the bed
    def read(self, name: str) -> bytes | None: ...  # one file under model_dir
    def read_result(self) -> bytes | None: ...  # the evaluator's final_result.json
    def apply(self, fault: Any) -> None: ...  # a storage fault (schedule.STORAGE_KINDS)


def _tree(root: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            try:
                found[os.path.relpath(path, root)] = os.path.getsize(path)
            except OSError:  # removed while walking (a rotated checkpoint)
                continue
    return found


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


class LocalStorage:
    """model_dir in a directory of this machine, seen alike by every bed host."""

    name = "local"
    staleness_secs = STORAGE_STALENESS_SECS["local"]
    lingers_secs: Mapping[str, float] = {}
    extra_hosts: Sequence[str] = ()
    DETAILS: Mapping[str, tuple[str, ...]] = {}  # it takes no storage fault

    def __init__(self, workdir: str) -> None:
        self.model_dir = os.path.join(workdir, "model")
        self.result_file = os.path.join(workdir, "final_result.json")

    def bed_options(self) -> Mapping[str, Any]:
        return {}

    @contextlib.contextmanager
    def started(self, bed: Any) -> Iterator[None]:
        os.makedirs(self.model_dir, exist_ok=True)
        yield

    def job_paths(self) -> JobPaths:
        return JobPaths(self.model_dir, self.result_file)

    def files(self) -> dict[str, int]:
        return _tree(self.model_dir)

    def read(self, name: str) -> bytes | None:
        return _read(os.path.join(self.model_dir, name))

    def read_result(self) -> bytes | None:
        return _read(self.result_file)

    def apply(self, fault: Any) -> None:
        raise ValueError(f"{fault.describe()}: a local disk plays no storage fault")


class NfsStorage:
    """model_dir on NFS-like per-host views of one backing directory."""

    name = "nfs"
    staleness_secs = STORAGE_STALENESS_SECS["nfs"]
    lingers_secs: Mapping[str, float] = {}  # a stall's end lets every blocked call go on
    extra_hosts: Sequence[str] = ()

    def __init__(self, workdir: str, faults: bool = False) -> None:
        from trainexec.testing.storage import SharedDir

        # With storage faults: the fault layer, and a volume of its own to fill.
        self.shared = SharedDir(os.path.join(workdir, "shared"), faults=faults,
                                size_mb=NFS_VOLUME_MB if faults else None)
        self._ends = _FaultEnds()

    def bed_options(self) -> Mapping[str, Any]:
        return {"shared_dir": self.shared}

    @contextlib.contextmanager
    def started(self, bed: Any) -> Iterator[None]:
        os.makedirs(self.shared.on_machine(self.shared.on_hosts("model")), exist_ok=True)
        with self._ends:
            yield

    def job_paths(self) -> JobPaths:
        return JobPaths(self.shared.on_hosts("model"), self.shared.on_hosts(
            "final_result.json"), self.shared.pod_env())

    def files(self) -> dict[str, int]:
        return _tree(self.shared.on_machine(self.shared.on_hosts("model")))

    def read(self, name: str) -> bytes | None:
        return _read(self.shared.on_machine(self.shared.on_hosts("model", name)))

    def read_result(self) -> bytes | None:
        return _read(self.shared.on_machine(self.shared.on_hosts("final_result.json")))

    # The details a drawn fault of each kind takes here (`Schedule.generate` picks one);
    # a fault written without one takes the first.
    DETAILS: Mapping[str, tuple[str, ...]] = {"storage-errors": ("EIO", "ESTALE"),
                                              "storage-slow": ("0.05s",)}

    @classmethod
    def setting(cls, kind: str, detail: str | None) -> int | float | None:
        """What fault `kind` written `with detail` does here: the errno a failing call
        raises (default EIO), the seconds a slow call takes (default 0.05 s), nothing for
        a stall or a full disk. ValueError, saying what to write, for a detail it cannot
        apply."""
        if kind == "storage-errors":
            return _errno_of(_or_first(detail, cls.DETAILS[kind]))
        if kind == "storage-slow":
            return _seconds(_or_first(detail, cls.DETAILS[kind]))
        _no_detail(kind, detail)
        return None

    def apply(self, fault: Any) -> None:
        secs = fault.duration_secs
        value = self.setting(fault.kind, fault.detail)  # refuses what it cannot apply
        if fault.kind == "storage-errors":
            self.shared.fail(cast(int, value), secs)
        elif fault.kind == "storage-outage":
            self.shared.stall(secs)
        elif fault.kind == "storage-slow":
            self.shared.slow(cast(float, value), secs)
        elif fault.kind == "disk-full":  # the volume full for the fault's time
            self.shared.fill()
            self._ends.after(secs, self.shared.free)
        else:
            raise ValueError(f"{fault.kind} is not a fault of NFS-like storage")


class GcsStorage:
    """model_dir in a bucket of a GCS emulator on bed host "gcs", through TensorFlow's
    own gs:// client with its default settings (stat cache included)."""

    name = "gs"
    staleness_secs = STORAGE_STALENESS_SECS["gs"]
    # A request whose connection the silent bucket never accepted waits on after the
    # outage: the kernel resends its SYN 1, 3, 7, 15, 31 s after the first, and
    # TensorFlow's GCS client gives the request up at 60 s without progress
    # (GCS_REQUEST_IDLE_TIMEOUT_SECS) and retries it 1-2 s later. Whenever in the
    # outage it began, the first of those after the outage comes within 29 s (a
    # request begun 31 s before the end: the give-up at 60 s), and the retry's within
    # 2 s more. Seen after 50 s outages: "stuck at 0 of 0 bytes for 61 seconds and will
    # be aborted" 14-18 s after the bucket answered again, in 23 runs of 36, and a
    # chief's save going on 28 s after it.
    lingers_secs: Mapping[str, float] = {"storage-outage": 35.0}
    extra_hosts: Sequence[str] = ("gcs",)
    prefix = "model/"

    def __init__(self, workdir: str, faults: bool = False) -> None:
        from trainexec.testing.gcs import GcsEmulator

        self.result_file = os.path.join(workdir, "final_result.json")
        self.emulator = GcsEmulator(os.path.join(workdir, "gcs"))
        self._ends = _FaultEnds()

    def bed_options(self) -> Mapping[str, Any]:
        return {"aliases": {"gcs": self.emulator.HOST_NAMES}}

    @contextlib.contextmanager
    def started(self, bed: Any) -> Iterator[None]:
        self.emulator.start(address=bed.host("gcs").address,
                            run=lambda argv, **kw: bed.popen("gcs", argv, **kw))
        try:
            with self._ends:
                yield
        finally:
            self.emulator.stop()

    def job_paths(self) -> JobPaths:
        self.emulator.prepare()  # its CA, for the pods' environment
        # The result goes to a local file: every host's mount namespace sees the workdir.
        return JobPaths(self.emulator.url(self.prefix.rstrip("/")), self.result_file,
                        self.emulator.client_env())

    def files(self) -> dict[str, int]:
        return {name[len(self.prefix):]: size
                for name, size in self.emulator.list_objects(self.prefix).items()
                if not name.endswith("/")}  # TensorFlow's directory markers

    def read(self, name: str) -> bytes | None:
        return self.emulator.read_object(self.prefix + name)

    def read_result(self) -> bytes | None:
        return _read(self.result_file)

    # The details a drawn fault of each kind takes here; a fault written without one
    # takes the first.
    DETAILS: Mapping[str, tuple[str, ...]] = {"storage-errors": ("503", "429", "500"),
                                              "storage-slow": ("1s",)}

    @classmethod
    def setting(cls, kind: str, detail: str | None) -> int | float | None:
        """What fault `kind` written `with detail` does here: the HTTP status the
        emulator answers (default 503), the seconds an answer waits (default 1 s),
        nothing for an outage. ValueError, saying what to write, for a detail it cannot
        apply (a full disk included: a bucket has none)."""
        if kind == "storage-errors":
            return _status_of(_or_first(detail, cls.DETAILS[kind]))
        if kind == "storage-slow":
            return _seconds(_or_first(detail, cls.DETAILS[kind]))
        if kind == "disk-full":
            raise ValueError("gs:// has no disk to fill")
        _no_detail(kind, detail)
        return None

    def apply(self, fault: Any) -> None:
        from trainexec.testing.gcs.faults import FaultPlan

        secs = fault.duration_secs
        value = self.setting(fault.kind, fault.detail)  # refuses what it cannot apply
        if fault.kind == "storage-errors":
            self.emulator.inject(FaultPlan("error", status=cast(int, value), secs=secs))
        elif fault.kind == "storage-slow":
            self.emulator.inject(FaultPlan("delay", delay_secs=cast(float, value),
                                           secs=secs))
        elif fault.kind == "storage-outage":
            self.emulator.pause()
            self._ends.after(secs, self.emulator.resume)
        else:
            raise ValueError(f"{fault.kind} is not a fault of gs:// storage")


_STORAGES: dict[str, type[LocalStorage] | type[NfsStorage] | type[GcsStorage]] = {
    "local": LocalStorage, "nfs": NfsStorage, "gs": GcsStorage}


def fault_setting(storage: str, kind: str, detail: str | None) -> int | float | None:
    """What storage fault `kind` written `with detail` does on storage `storage` (its
    class's `setting`); ValueError, saying what to write, when that storage cannot
    apply it."""
    kind_class = _STORAGES[storage]
    if kind_class is LocalStorage:
        raise ValueError("local storage takes no storage faults: use --storage nfs or gs")
    return kind_class.setting(kind, detail)  # type: ignore[union-attr]


def _or_first(detail: str | None, details: tuple[str, ...]) -> str:
    """A fault's written detail, or its storage's default for the kind (the first)."""
    return detail or details[0]


def drawn_details(storage: str, kind: str) -> tuple[str, ...]:
    """The details a drawn fault of `kind` on `storage` takes (one is picked per fault);
    ("",) for a kind that takes none."""
    return _STORAGES[storage].DETAILS.get(kind, ("",))


def _errno_of(name: str) -> int:
    """The errno named "EIO", "ESTALE", ..."""
    code = getattr(errno, name, None)
    if not name.isupper() or not isinstance(code, int):
        raise ValueError("a file server fails with an errno: write 'with EIO' or 'ESTALE'")
    return code


def _status_of(status: str) -> int:
    """The HTTP error status written "503"."""
    if not (status.isdigit() and 400 <= int(status) <= 599):
        raise ValueError("gs:// answers an HTTP status: write 'with 503' (400-599)")
    return int(status)


def _seconds(written: str) -> float:
    """Seconds written as "1s" or "0.5s"."""
    try:
        secs = float(written[:-1]) if written.endswith("s") else -1.0
    except ValueError:
        secs = -1.0
    if not (math.isfinite(secs) and secs > 0):  # "nans", "infs" refused too
        raise ValueError("slow answers take seconds: write 'with 1s'")
    return secs


def _no_detail(kind: str, detail: str | None) -> None:
    if detail:
        raise ValueError(f"a {kind} takes no 'with ...': drop {detail!r}")


def storage_for(name: str, workdir: str, faults: bool = False) -> ChaosStorage:
    """The storage called `name` ("local", "nfs" or "gs") for a run in `workdir`;
    `faults`: the run plays storage faults on it."""
    try:
        kind = _STORAGES[name]
    except KeyError:
        raise ValueError(f"storage {name!r}: use one of {', '.join(_STORAGES)}") from None
    return kind(workdir) if kind is LocalStorage else kind(workdir, faults)  # type: ignore[call-arg]


class _FaultEnds:
    """The ends of a storage's faults still to come (a full disk freed, an outage
    over), each on a daemon timer; leaving it (the storage stopping: a run over, or
    interrupted) cancels those not yet played, which would act on a storage gone."""

    def __init__(self) -> None:
        self._timers: list[threading.Timer] = []

    def after(self, secs: float, then: Any) -> None:
        """`then()` in `secs` (a fault's end)."""
        timer = threading.Timer(secs, then)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def __enter__(self) -> "_FaultEnds":
        return self

    def __exit__(self, *exc: Any) -> None:
        for timer in self._timers:
            timer.cancel()
        for timer in self._timers:  # an end being played as the storage stops: done first
            timer.join(timeout=10)
        self._timers.clear()


def result_of(storage: ChaosStorage) -> Mapping | None:
    """The evaluator's final result (JSON), or None."""
    raw = storage.read_result()
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None
