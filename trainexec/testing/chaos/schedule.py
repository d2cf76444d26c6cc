"""Chaos schedules: a job's shape, its storage and the faults to apply, seeded.

A `Schedule` says everything a chaos run needs to be replayed: the seed it came
from (None for a hand-written one), the job's shape (mode, workers, ps,
evaluator), where model_dir lives ("local": a directory of this machine every
host sees as it is; "nfs": `trainexec.testing.storage.SharedDir` views with
NFS's caching; "gs": a bucket of `trainexec.testing.gcs`'s emulator through
TensorFlow's own client; `trainexec.testing.chaos.storages`) and its `Fault`s, each at a time counted from the moment
training began (the first checkpoint).

`Schedule.generate(seed)` draws all of it from `random.Random(seed)` alone, so
the same seed (with the same `modes`, `storages` and `faults` range) always
gives the same schedule; `Schedule.explicit(...)` writes one by hand. Its times
suit the packaged jobs, which train about `TRAINING_SECS` after their first
checkpoint; for a job of your own, `training_secs=` (what a run without faults
measured: `ChaosReport.training_secs`) scales the draws to its training, so that
every fault starts while it trains.

Example:
    ```python
    schedule = Schedule.generate(3, modes=("mwms",), storages=("local",))
    print(schedule.describe())  # seed 3: mwms (chief, 2 workers, evaluator) on ...
    fixed = Schedule.explicit("mwms", ["cut chief:0 at 7.7s for 12.9s",
                                       "sigterm worker:0 at 7.7s"])
    ```
"""

from __future__ import annotations

import dataclasses
import random
import re
from typing import Any, Iterable, Mapping, Sequence

from trainexec.testing.chaos.storages import drawn_details, fault_setting

__all__ = ["ALL_KINDS", "DRAWN_MODES", "DRAWN_STORAGES", "KINDS", "MODES", "STORAGES",
           "STORAGE_FAULTS", "STORAGE_KINDS", "TRAINING_SECS", "Fault", "Schedule",
           "parse_seeds"]

KINDS = ("kill", "sigterm", "freeze", "cut")  # of a pod
# Of the storage model_dir is on (task "storage:0"): errors for a while (an object store's
# 503/429/500, a file server's EIO/ESTALE), an outage (the bucket paused, the file server
# stalled), slow answers, and a full disk (a file server's volume, freed at the fault's
# end; the job stops with the permanent storage code and is resubmitted).
STORAGE_KINDS = ("storage-errors", "storage-outage", "storage-slow", "disk-full")
ALL_KINDS = KINDS + STORAGE_KINDS
STORAGE_FAULTS = {"local": (), "gs": STORAGE_KINDS[:3], "nfs": STORAGE_KINDS}
# MultiWorkerMirrored and ParameterServer Keras jobs, tf.estimator's Estimator (the
# TF 2.15 line), trainexec.estimator's own engine (the current line), a canned
# estimator on it (`trainexec.examples.canned_job`: a DNNLinearCombinedClassifier), and
# its Estimator under `RunConfig(train_distribute=MultiWorkerMirroredStrategy())`.
MODES = ("mwms", "pss", "estimator", "native-estimator", "canned", "estimator-mwms")
PS_MODES = ("pss", "estimator", "native-estimator", "canned")
# What `generate` draws from unless told: the modes its seeds were first drawn over
# (adding one would change what every kept seed means). The later ones are asked for
# by name.
DRAWN_MODES = ("mwms", "pss", "estimator", "native-estimator")
STORAGES = ("local", "nfs", "gs")
# What `generate` draws from unless told: the storages its seeds were first drawn over
# (adding one would change what every kept seed means). "gs" is asked for by name.
DRAWN_STORAGES = ("local", "nfs")
TASK_TYPES = ("chief", "worker", "ps", "evaluator")
STORAGE_TASK = "storage"  # a storage fault's task: storage:0

# What `generate` draws from (seconds after training began). The packaged jobs train
# their 1200 steps in about 10 s on 2 cores without faults (every mode), so faults
# start inside that span, where they meet training; one that lands after a restart
# meets recovery, and the longest freezes and cuts outlast the whole span.
TRAINING_SECS = 10.0  # the timeline below is drawn for a job training about this long
FIRST_FAULT_SECS = 1.0
LAST_FAULT_SECS = 9.0
MIN_DURATION_SECS = 1.5
MAX_DURATION_SECS = 12.0
OVERLAP_CHANCE = 0.45  # a fault after the first starts inside an active freeze or cut


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault: `kind` (kill: SIGKILL, the node lost the pod; sigterm: a
    preemption; freeze: SIGSTOP for `duration_secs`, then SIGCONT; cut: the pod's
    host off the network for `duration_secs`) of `task_type:index`, `at_secs`
    after training began."""

    kind: str
    task_type: str
    index: int
    at_secs: float
    duration_secs: float = 0.0
    detail: str = ""  # a storage fault's status, errno or delay: "503", "EIO", "1s"

    def __post_init__(self) -> None:
        if self.kind not in ALL_KINDS:
            raise ValueError(f"fault kind {self.kind!r}: use one of {', '.join(ALL_KINDS)}")
        if self.on_storage != (self.task_type == STORAGE_TASK):
            raise ValueError(f"fault {self.kind} of {self.task_type}: a storage fault's task "
                             f"is {STORAGE_TASK}:0, a pod fault's one of "
                             f"{', '.join(TASK_TYPES)}")
        if self.task_type not in (*TASK_TYPES, STORAGE_TASK):
            raise ValueError(f"fault task type {self.task_type!r}: use one of "
                             f"{', '.join(TASK_TYPES)}")
        if isinstance(self.index, bool) or not isinstance(self.index, int) or self.index < 0:
            raise ValueError(f"fault index {self.index!r}: use an integer >= 0")
        if self.at_secs < 0:
            raise ValueError(f"fault at_secs {self.at_secs!r}: use seconds >= 0 after "
                             f"training began")
        if self.lasting and self.duration_secs <= 0:
            raise ValueError(f"a {self.kind} lasts a while: give duration_secs > 0 "
                             f"('for 3s')")
        if not self.lasting and self.duration_secs:
            raise ValueError(f"a {self.kind} is instantaneous: leave duration_secs 0 "
                             f"(drop 'for ...')")

    @property
    def lasting(self) -> bool:
        """Freeze, cut and every storage fault last `duration_secs`; kill and sigterm
        are instantaneous."""
        return self.kind in ("freeze", "cut") or self.on_storage

    @property
    def on_storage(self) -> bool:
        return self.kind in STORAGE_KINDS

    @property
    def task(self) -> str:
        return f"{self.task_type}:{self.index}"

    @property
    def ends_secs(self) -> float:
        return self.at_secs + self.duration_secs

    def active_at(self, secs: float) -> bool:
        """Whether this (lasting) fault is in force at `secs`."""
        return self.lasting and self.at_secs <= secs < self.ends_secs

    def describe(self) -> str:
        """`cut chief:0 at 7.7s for 12.9s`, `sigterm worker:0 at 7.7s` (`parse` reads it)."""
        text = f"{self.kind} {self.task} at {self.at_secs:g}s"
        text = f"{text} for {self.duration_secs:g}s" if self.lasting else text
        return f"{text} with {self.detail}" if self.detail else text

    _SECS = r"(\d+(?:\.\d+)?)s?"  # 9, 9s, 3.7s
    _TEXT = re.compile(rf"^\s*([\w-]+)\s+(\w+):(\d+)\s+at\s+{_SECS}"
                       rf"(?:\s+for\s+{_SECS})?(?:\s+with\s+(\S+))?\s*$")

    @classmethod
    def parse(cls, text: str) -> "Fault":
        """The fault `describe()` wrote (`kill evaluator:0 at 7.7s`, `freeze ps:0 at
        5s for 3s`)."""
        match = cls._TEXT.match(text)
        if not match:
            raise ValueError(f"fault {text!r}: write it as KIND TYPE:INDEX at SECS "
                             f"[for SECS] [with DETAIL], e.g. 'cut worker:0 at 9s for "
                             f"3.7s' or 'storage-errors storage:0 at 2s for 5s with 503'")
        kind, task_type, index, at, duration, detail = match.groups()
        return cls(kind, task_type, int(index), float(at), float(duration or 0.0),
                   detail or "")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A replayable chaos run: seed, the job's shape, storage, and the faults in
    time order (see the module doc)."""

    seed: int | None
    mode: str
    workers: int = 2
    ps: int = 0
    evaluator: bool = True
    storage: str = "local"
    faults: tuple[Fault, ...] = ()
    name: str = ""  # what a hand-written schedule is called (a regression's name)
    # How long the job trains (None: the runner's max_steps): a kept schedule whose
    # faults come later than the packaged jobs' 1200 steps last sets more, so that its
    # faults still meet training.
    max_steps: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r}: use one of {', '.join(MODES)}")
        if self.storage not in STORAGES:
            raise ValueError(f"storage {self.storage!r}: use one of {', '.join(STORAGES)}")
        if self.workers < 0 or self.ps < 0:
            raise ValueError(f"workers {self.workers}, ps {self.ps}: use counts >= 0")
        if self.mode in PS_MODES and self.ps < 1:
            raise ValueError(f"a {self.mode} job needs a ps: give ps >= 1")
        if self.mode == "mwms" and self.ps:
            raise ValueError("a mwms job has no ps: give ps=0")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps {self.max_steps}: use a number of steps >= 1 or "
                             f"None for the runner's")
        faults = tuple(sorted(self.faults, key=lambda f: f.at_secs))
        object.__setattr__(self, "faults", faults)
        tasks = set(self.tasks())
        for fault in faults:
            if fault.on_storage:
                if fault.kind not in STORAGE_FAULTS[self.storage]:
                    raise ValueError(f"fault {fault.describe()!r}: {self.storage} storage "
                                     f"has only {list(STORAGE_FAULTS[self.storage])}")
                try:
                    fault_setting(self.storage, fault.kind, fault.detail)
                except ValueError as why:
                    raise ValueError(f"fault {fault.describe()!r}: {why}") from None
                continue
            if (fault.task_type, fault.index) not in tasks:
                raise ValueError(f"fault {fault.describe()!r}: this job has no "
                                 f"{fault.task} ({self.shape()})")

    # -- the job ----------------------------------------------------------------------
    def tasks(self) -> list[tuple[str, int]]:
        """Every task of the job: chief, workers, ps, evaluator."""
        return ([("chief", 0)] + [("worker", i) for i in range(self.workers)]
                + [("ps", i) for i in range(self.ps)]
                + ([("evaluator", 0)] if self.evaluator else []))

    def shape(self) -> str:
        """`mwms (chief, 2 workers, evaluator)`."""
        parts = ["chief"]
        if self.workers:
            parts.append(f"{self.workers} worker{'s' if self.workers != 1 else ''}")
        if self.ps:
            parts.append(f"{self.ps} ps")
        if self.evaluator:
            parts.append("evaluator")
        return f"{self.mode} ({', '.join(parts)})"

    def shape_key(self) -> tuple:
        """What a run without faults of the same job shares with this one."""
        return (self.mode, self.workers, self.ps, self.evaluator, self.storage)

    def without_faults(self) -> "Schedule":
        return dataclasses.replace(self, faults=(), name=f"{self.label()} baseline")

    # -- the faults -------------------------------------------------------------------
    @property
    def last_fault_end_secs(self) -> float:
        return max((f.ends_secs for f in self.faults), default=0.0)

    @property
    def last_start_secs(self) -> float:
        """When the last fault starts (0: no fault)."""
        return max((f.at_secs for f in self.faults), default=0.0)

    def overlaps(self) -> list[tuple[Fault, Fault]]:
        """(active, started): each fault that starts while an earlier freeze or cut
        is in force."""
        return [(a, b) for i, b in enumerate(self.faults) for a in self.faults[:i]
                if a.active_at(b.at_secs)]

    def label(self) -> str:
        if self.name:
            return self.name
        return f"seed {self.seed}" if self.seed is not None else "explicit"

    def describe(self) -> str:
        """One readable line: label, shape, storage and faults."""
        faults = "; ".join(f.describe() for f in self.faults) or "no fault"
        overlaps = len(self.overlaps())
        more = f" ({overlaps} overlapping)" if overlaps else ""
        steps = f", {self.max_steps} steps" if self.max_steps is not None else ""
        return f"{self.label()}: {self.shape()} on {self.storage}{steps}: {faults}{more}"

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "mode": self.mode, "workers": self.workers,
                "ps": self.ps, "evaluator": self.evaluator, "storage": self.storage,
                "faults": [f.to_dict() for f in self.faults], "name": self.name,
                "max_steps": self.max_steps}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Schedule":
        fields = dict(data)
        fields["faults"] = tuple(Fault(**f) for f in fields.get("faults", ()))
        return cls(**fields)

    # -- making one ---------------------------------------------------------------------
    @classmethod
    def explicit(cls, mode: str, faults: Iterable[Fault | str], *, seed: int | None = None,
                 storage: str = "local", workers: int = 2, ps: int | None = None,
                 evaluator: bool = True, name: str = "",
                 max_steps: int | None = None) -> "Schedule":
        """A hand-written schedule; faults as `Fault`s or their `describe()` text.
        `ps` defaults to 1 for the modes that need one, else 0."""
        if ps is None:
            ps = 1 if mode in PS_MODES else 0
        return cls(seed, mode, workers, ps, evaluator, storage,
                   tuple(f if isinstance(f, Fault) else Fault.parse(f) for f in faults),
                   name, max_steps)

    @classmethod
    def generate(cls, seed: int, *, modes: Sequence[str] = DRAWN_MODES,
                 storages: Sequence[str] = DRAWN_STORAGES, faults: tuple[int, int] = (2, 4),
                 workers: int = 2, evaluator: bool = True,
                 kinds: Sequence[str] = KINDS,
                 training_secs: float | None = None) -> "Schedule":
        """The schedule of `seed`: drawn from `random.Random(seed)` only (so the same
        arguments give the same schedule anywhere): mode and storage among those
        given, `faults[0]`..`faults[1]` faults of any task (ps and evaluator too),
        each of `kinds` (by default a kill, sigterm, freeze or cut of a pod; storage
        kinds are drawn where the storage has them); after the first, some start
        while an earlier lasting fault is in force.

        Times are drawn for the packaged jobs (faults 1-9 s after training began,
        lasting faults of 1.5-12 s). `training_secs`, how long your job trains
        after its first checkpoint, scales them by `training_secs / TRAINING_SECS`,
        and every fault then starts within that span."""
        if training_secs is not None and training_secs <= 0:
            raise ValueError(f"training_secs={training_secs!r}: give the seconds the job "
                             "trains after its first checkpoint (> 0)")
        scale = 1.0 if training_secs is None else training_secs / TRAINING_SECS
        low, high = faults
        if not 1 <= low <= high:
            raise ValueError(f"faults=({low}, {high}): give 1 <= low <= high")
        if not modes or not storages:
            raise ValueError("give at least one mode and one storage")
        rng = random.Random(seed)
        mode = rng.choice(list(modes))
        storage = rng.choice(list(storages))
        shape = cls(seed, mode, workers, 1 if mode in PS_MODES else 0, evaluator, storage)
        tasks = shape.tasks()
        pool = [k for k in kinds if k in KINDS or k in STORAGE_FAULTS[storage]]
        unknown = [k for k in kinds if k not in ALL_KINDS]
        if unknown or not pool:
            raise ValueError(f"kinds {list(kinds)}: use some of {', '.join(ALL_KINDS)} "
                             f"({storage} storage has {list(STORAGE_FAULTS[storage])})")
        drawn: list[Fault] = []
        for _ in range(rng.randint(low, high)):
            kind = rng.choice(pool)
            task_type, index = ((STORAGE_TASK, 0) if kind in STORAGE_KINDS
                                else rng.choice(tasks))
            active = [f for f in drawn if f.lasting]
            if active and rng.random() < OVERLAP_CHANCE:
                # Starts while an earlier one is in force: inside its window.
                base = rng.choice(active)
                at = base.at_secs + rng.uniform(0.0, base.duration_secs * 0.9)
                if training_secs is not None:  # still while it trains
                    at = min(at, LAST_FAULT_SECS * scale)
            else:
                at = rng.uniform(FIRST_FAULT_SECS * scale, LAST_FAULT_SECS * scale)
            lasting = kind in ("freeze", "cut") or kind in STORAGE_KINDS
            duration = (max(round(rng.uniform(MIN_DURATION_SECS * scale,
                                              MAX_DURATION_SECS * scale), 1), 0.1)
                        if lasting else 0.0)
            details = drawn_details(storage, kind)
            detail = rng.choice(details) if len(details) > 1 else details[0]
            drawn.append(Fault(kind, task_type, index, round(at, 1), duration, detail))
        return dataclasses.replace(shape, faults=tuple(drawn))


def parse_seeds(text: str) -> list[int]:
    """`1-20`, `3,14,28`, `1-5,31` -> the seeds, in order, without repeats."""
    seeds: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise ValueError(f"seeds {text!r}: write them as 1-20 or 3,14,28")
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            raise ValueError(f"seeds {part!r}: the range runs backwards")
        seeds.extend(s for s in range(first, last + 1) if s not in seeds)
    if not seeds:
        raise ValueError(f"seeds {text!r}: no seed given")
    return seeds
