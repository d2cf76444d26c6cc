"""LocalClusters for tests: a quiet output sink, waiting until tasks are ready, and a
fixture that stops every cluster it built (and kills what survived) whatever happens."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading

import pytest

from trainexec.launch import LocalCluster
from processes import alive, started_pids, wait_until

__all__ = ["GRACE", "Sink", "make_cluster", "ready", "tf_config_printed", "wait_ready"]

GRACE = 1.0


class Sink:
    """An `output` callable collecting the launcher's prefixed lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)

def ready(cluster: LocalCluster, *names: str) -> bool:
    names = names or tuple(t.name for t in cluster.tasks)
    return all("ready" in cluster.task(n).output_lines() for n in names)

def wait_ready(cluster: LocalCluster, *names: str) -> None:
    """Waits until the tasks (default all) printed "ready": nothing is stopped
    before `wait()` runs, so this makes every test deterministic."""
    wait_until(lambda: ready(cluster, *names), what=f"{names or 'all tasks'} ready")

@pytest.fixture
def make_cluster():
    """Builds quiet LocalClusters and, whatever happens, stops them afterwards."""
    made: list[LocalCluster] = []

    def make(command, **kwargs) -> LocalCluster:
        kwargs.setdefault("grace_secs", GRACE)
        kwargs.setdefault("output", Sink())
        cluster = LocalCluster(command, **kwargs)
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        cluster.stop_all()
        for pid in started_pids(cluster):
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

def tf_config_printed(task) -> dict:
    lines = [l for l in task.output_lines() if l.startswith("TF_CONFIG ")]
    assert lines, f"{task.name} printed no TF_CONFIG: {task.output_lines()}"
    return json.loads(lines[0][len("TF_CONFIG "):])
