"""The demo jobs as TFJobs on separate hosts whose model_dir is shared storage as a real
cluster has it: every pod on its own host (hostname, pid namespace, mounts), model_dir on
that host's own NFS-like view of one directory (trainexec.testing.storage: NFS's default
caching, so a host may see another's new file up to a minute late, and inotify does not
cross hosts). The test reads the backing directory, behind no cache.

Every row asserts what a user sees: the job Succeeded at max_steps, the evaluator wrote its
final metrics, the killed pod was restarted, no exit code was permanent, and every pod ended
by itself within SETTLE_SECS plus the storage's staleness after the chief succeeded. Rows:
each job (MultiWorkerMirrored, ParameterServer, Estimator) with no fault, a killed worker,
a killed ps and a killed evaluator. The default run has one row per job; `-m multihost`
runs them all (tests/conftest.py). Root and bindfs only: skipped, saying why, elsewhere.

Storage is a parameter (`STORAGES`): a new kind (object storage through an emulator on a
bed host) is one more class with the `Storage` shape below and one more entry there.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from typing import Iterator, Mapping, Protocol, Sequence

import pytest

from multihost_jobs import (FAULTS, MAX_STEPS, Progress, demo_job, late_pods, mode_skip,
                            newest_step, pod_lags, report)
from trainexec.records import checkpoints
from trainexec.testing import gcs
from trainexec.testing import storage as storage_views
from trainexec.testing.gcs import GcsEmulator
from trainexec.testing.kubelet import SUCCEEDED, TFJobRun
from trainexec.testing.netns import TestBed, unavailable
from trainexec.testing.storage import NFS_DEFAULTS, SharedDir

WHY_NOT = unavailable() or storage_views.unavailable()
SETTLE_SECS = 10.0  # on a local disk, every pod ends by itself within this of the chief
JOB_TIMEOUT_SECS = 900.0

pytestmark = [pytest.mark.cluster, pytest.mark.multihost,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


class Storage(Protocol):
    """Where a job's model_dir lives: what the bed needs, what the pods get, what the
    test reads."""

    id: str
    staleness_secs: float  # how late a host may see another's change, at worst
    extra_hosts: Sequence[str]  # bed hosts of its own (an emulator's)

    def bed_options(self) -> Mapping[str, object]: ...  # TestBed keywords
    def started(self, bed: TestBed) -> contextlib.AbstractContextManager: ...
    def pod_env(self) -> Mapping[str, str]: ...  # the pods' environment (a client_env)
    def model_dir_on_pods(self) -> str: ...  # a path or a URL
    def result_file(self) -> str: ...  # the evaluator's final result, local to every host
    def newest_step(self) -> int: ...  # the newest checkpoint's step, read by the test


class NfsStorage:
    """model_dir on an NFS-like shared directory (`SharedDir`) with NFS's default
    caching (acregmax 60, acdirmax 60, lookupcache=all)."""

    id = "nfs"
    extra_hosts: Sequence[str] = ()

    def __init__(self, tmp_path, caching=NFS_DEFAULTS) -> None:
        self.shared = SharedDir(str(tmp_path / "shared"), caching=caching)
        self.staleness_secs = max(caching.attr_secs, caching.entry_secs,
                                  caching.negative_secs)

    def bed_options(self) -> Mapping[str, object]:
        return {"shared_dir": self.shared}

    def started(self, bed: TestBed) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def pod_env(self) -> Mapping[str, str]:
        return self.shared.pod_env()

    def model_dir_on_pods(self) -> str:
        return self.shared.on_hosts("model")

    def model_dir_here(self) -> str:
        return self.shared.on_machine(self.model_dir_on_pods())

    def result_file(self) -> str:
        return os.path.join(self.model_dir_on_pods(), "final_result.json")

    def result_here(self) -> str:
        return self.shared.on_machine(self.result_file())

    def newest_step(self) -> int:
        return newest_step(self.model_dir_here())


class GcsStorage:
    """model_dir in a bucket of a GCS emulator on bed host "gcs", reached through
    TensorFlow's own gs:// file system (trainexec.testing.gcs). The test, outside the
    bed, reads the checkpoint state and the evaluator's result from the emulator's
    files; the result is written to a local file (`report_result` writes locally)."""

    id = "gs"
    extra_hosts: Sequence[str] = ("gcs",)
    staleness_secs = 5.0  # TensorFlow's GCS stat cache (GCS_STAT_CACHE_MAX_AGE)

    def __init__(self, tmp_path) -> None:
        self.tmp_path = tmp_path
        self.emulator: GcsEmulator | None = None

    def bed_options(self) -> Mapping[str, object]:
        return {"aliases": {"gcs": GcsEmulator.HOST_NAMES}}

    @contextlib.contextmanager
    def started(self, bed: TestBed) -> Iterator[None]:
        self.emulator = GcsEmulator(
            str(self.tmp_path / "gcs"), address=bed.host("gcs").address,
            run=lambda argv, **kw: bed.popen("gcs", argv, **kw))
        with self.emulator:
            yield

    def pod_env(self) -> Mapping[str, str]:
        return self.emulator.client_env()

    def model_dir_on_pods(self) -> str:
        return "gs://trainexec-test/model"

    def result_file(self) -> str:
        return str(self.tmp_path / "final_result.json")

    def result_here(self) -> str:
        return self.result_file()

    def newest_step(self) -> int:
        text = self.emulator.read_object("model/checkpoint") if self.emulator else None
        match = re.search(rb'^model_checkpoint_path: "([^"]+)"', text or b"", re.M)
        return (checkpoints.checkpoint_step(match.group(1).decode()) or 0) if match else 0


STORAGES = {"nfs": NfsStorage, "gs": GcsStorage}

_full = pytest.mark.full_matrix
_keras, _estimator = pytest.mark.keras, pytest.mark.estimator
# The default run: two rows per storage (a Keras row for the current line, an Estimator
# row for 2.15), and trainexec.estimator's job on gs:// for the current line; `-m multihost`
# runs every row on both.
DEFAULT_ROWS = {("nfs", "mwms-kill-worker"), ("nfs", "estimator-kill-evaluator"),
                ("gs", "pss-kill-ps"), ("gs", "estimator-no-fault"),
                ("gs", "native-estimator-no-fault")}
_MARKERS = {"estimator": [_estimator], "native-estimator": [], "mwms": [_keras],
            "pss": [_keras]}
ROWS = []
for _storage in STORAGES:
    for _mode, _tasks in (("mwms", (("worker", 1), ("evaluator", 0))),
                          ("pss", (("worker", 1), ("ps", 0), ("evaluator", 0))),
                          ("estimator", (("worker", 1), ("ps", 0), ("evaluator", 0))),
                          ("native-estimator", (("worker", 1), ("ps", 0), ("evaluator", 0)))):
        for _fault in [None] + [("kill", task, index) for task, index in _tasks]:
            _id = (f"{_mode}-"
                   f"{'no-fault' if _fault is None else '-'.join(map(str, _fault[:2]))}")
            _marks = list(_MARKERS[_mode])
            if (_storage, _id) not in DEFAULT_ROWS:
                _marks.append(_full)
            ROWS.append(pytest.param(_storage, _mode, _fault, id=f"{_storage}-{_id}",
                                     marks=_marks))


@contextlib.contextmanager
def _pods_log(tmp_path) -> Iterator:
    with open(tmp_path / "pods.log", "w") as log:
        yield log


@pytest.mark.parametrize("storage_id, mode, fault", ROWS)
def test_a_tfjob_with_shared_storage_succeeds_and_every_pod_ends(tmp_path, storage_id, mode,
                                                                  fault):
    if mode_skip(mode):
        pytest.skip(mode_skip(mode))
    store: Storage = STORAGES[storage_id](tmp_path)
    settle_secs = SETTLE_SECS + store.staleness_secs
    fault_at = None
    if storage_id == "gs" and gcs.unavailable():
        pytest.skip(gcs.unavailable())
    # The job's hosts; the pods' environment comes once the storage is up.
    shape = demo_job(mode, store.model_dir_on_pods())
    with TestBed(shape.hosts() + list(store.extra_hosts), domain=shape.domain,
                 **store.bed_options()) as bed, store.started(bed), _pods_log(tmp_path) as log:
        job = demo_job(mode, store.model_dir_on_pods(), env=store.pod_env(),
                       result_file=store.result_file())
        if storage_id == "nfs":
            os.makedirs(store.model_dir_here(), exist_ok=True)
        with TFJobRun(job, bed, output=log) as run, Progress(store.newest_step) as progress:
            if fault is not None:
                kind, task, index = fault
                run.wait_for(lambda: store.newest_step() >= 200, 300, "a checkpoint")
                fault_at = time.monotonic()
                FAULTS[kind](run, task, index)
            outcome = run.wait(timeout=JOB_TIMEOUT_SECS, settle_secs=settle_secs)
            left = run.still_running()
    tail = "".join(open(tmp_path / "pods.log").readlines()[-40:])
    lags = pod_lags(outcome)
    result_path = store.result_here()
    report({"storage": storage_id, "mode": mode, "fault": fault and "-".join(map(str, fault)),
            "phase": outcome.phase, "reason": outcome.reason, "wall_secs": outcome.wall_secs,
            "restarts": sum(e.what == "restarting" for e in outcome.events),
            "exits": [(e.pod, e.code, round(e.at - outcome.started, 1))
                      for e in outcome.events if e.what == "exited"],
            "lags_after_chief": lags, "still_running": left,
            "fault_at": fault_at and round(fault_at - outcome.started, 1),
            "step_at_fault": fault_at and progress.step_at(fault_at),
            "result": os.path.exists(result_path), "log": str(tmp_path / "pods.log")})
    assert outcome.phase == SUCCEEDED, f"{outcome.reason}\n{tail}"
    late = left + late_pods(outcome, None, settle_secs)
    assert late == [], (f"still running {settle_secs:g}s after the chief succeeded: {late} "
                        f"(each pod's last exit after it: {lags})\n{tail}")
    assert os.path.exists(result_path), f"no final metrics from the evaluator\n{tail}"
    with open(result_path) as f:
        result = json.load(f)
    assert result["metrics"]["global_step"] >= MAX_STEPS, result
    exits = [e for e in outcome.events if e.what == "exited"]
    assert all(e.code == 0 or e.code >= 128 for e in exits), exits  # never permanent
    if fault is not None:
        restarted = [e for e in outcome.events
                     if e.what == "restarting" and e.pod == f"demo-{fault[1]}-{fault[2]}"]
        assert restarted, f"{fault[1]}:{fault[2]} was not restarted: {exits}"
