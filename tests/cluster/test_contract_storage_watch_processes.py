"""A task whose storage stops answering is not left waiting: on a bed host whose NFS-like
view of model_dir stalls (trainexec.testing.storage.SharedDir with faults), a program
blocked reading model_dir is ended by trainexec.contract.storage_watch with the
retryable storage code once the bound has passed, saying why. Root, bindfs and fusepy
only; skipped, saying why, elsewhere."""

from __future__ import annotations

import importlib.util
import os
import sys
import time

import pytest

from trainexec.testing import storage as storage_views
from trainexec.testing.netns import TestBed, unavailable
from trainexec.testing.storage import NO_CACHING, SharedDir

WHY_NOT = (unavailable() or storage_views.unavailable()
           or (None if importlib.util.find_spec("fuse") else "fusepy is missing"))
pytestmark = [pytest.mark.cluster, pytest.mark.multihost, pytest.mark.any_line,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BLOCKED_ON_STORAGE = """
import logging, os, sys, time
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
from trainexec.contract.storage_watch import StorageWatch, stall_bound
model_dir = sys.argv[1]
StorageWatch(model_dir, "worker:0", stall_bound(model_dir), poll_secs=0.5).start()
print("watching, bound", stall_bound(model_dir), flush=True)
open(os.path.join(sys.argv[2], "ready"), "w").close()
while True:  # a task at work on its storage: it reads, and blocks when that stalls
    os.listdir(model_dir)
    time.sleep(0.1)
"""


def test_a_task_blocked_on_a_stalled_file_server_exits_with_the_storage_code(tmp_path):
    shared = SharedDir(str(tmp_path / "backing"), caching=NO_CACHING, faults=True)
    with TestBed(["a"], shared_dir=shared) as bed:
        model_dir = shared.on_hosts("model")
        os.makedirs(shared.on_machine(model_dir))
        env = dict(os.environ, PYTHONPATH=ROOT, TRAINEXEC_STORAGE_STALL_SECS="3")
        proc = bed.popen("a", [sys.executable, "-c", BLOCKED_ON_STORAGE, model_dir,
                               str(tmp_path)], env=env, stdout=open(tmp_path / "out", "w"),
                         stderr=open(tmp_path / "err", "w"))
        deadline = time.monotonic() + 120
        while not (tmp_path / "ready").exists():
            assert proc.poll() is None and time.monotonic() < deadline, (
                open(tmp_path / "err").read())
            time.sleep(0.1)
        shared.stall(60)
        stalled_at = time.monotonic()
        try:
            code = proc.wait(timeout=40)
        finally:
            shared.clear()
    took = time.monotonic() - stalled_at
    err = open(tmp_path / "err").read()
    assert code == 172, err[-2000:]
    # the bound (from a probe that may have begun just before the stall), a poll, the start
    assert 2.5 <= took < 3.0 + 10, took
    assert f"worker:0: storage unavailable: {model_dir} did not answer in 3s" in err
