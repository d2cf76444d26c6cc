"""trainexec/launch/orphan_reaper.py: the watcher process SIGKILLs the task groups the
launcher has not swept once the launcher is gone, and another starts if it dies."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from trainexec.launch.orphan_reaper import OrphanReaper

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]


def test_the_watcher_kills_the_groups_not_forgotten_when_the_launcher_ends(caplog):
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    procs = [subprocess.Popen(sleep, start_new_session=True) for _ in range(3)]
    watcher = OrphanReaper()
    try:
        watcher.add(procs[0].pid)
        watcher.add(procs[1].pid)
        watcher.forget(procs[1].pid)  # swept by the launcher: its id may be reused
        first = watcher._proc
        first.kill()  # the watcher dies: the next task started gets a new one
        first.wait()
        watcher.add(procs[2].pid)
        assert watcher._proc is not None and watcher._proc.pid != first.pid
        assert any("watcher process has ended" in r.getMessage() for r in caplog.records)
        watcher.close()  # EOF, as when the launcher dies
        assert procs[0].wait(timeout=5) == -signal.SIGKILL
        assert procs[2].wait(timeout=5) == -signal.SIGKILL
        assert procs[1].poll() is None
    finally:
        watcher.close()
        for proc in procs:
            proc.kill()
            proc.wait()
