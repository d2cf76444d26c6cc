"""A record one host writes after another host looked for it in vain is read at once,
on NFS too: two bed hosts with NFS-like views of one directory (NFS's default caching:
a failed look-up remembered 60 s). Before trainexec looked records up only once a
listing showed them (`trainexec.records.layout.listed`), an evaluator that had looked
for the chief's completion record at its start saw it up to 60 s after it was written
(chaos seed 31: 35 s); and a host that had looked into the records' directory before
any host made it missed them as long (`make_watched_dir`). Root and bindfs only;
skipped, saying why, elsewhere."""

from __future__ import annotations

import os
import sys

import pytest

from trainexec.testing import storage as storage_views
from trainexec.testing.netns import TestBed, unavailable
from trainexec.testing.storage import SharedDir

WHY_NOT = unavailable() or storage_views.unavailable()
pytestmark = [pytest.mark.cluster, pytest.mark.multihost, pytest.mark.any_line,
              pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Each prints what one host sees: a plain look-up of another file written at the same
# time (the view's own caching, which also holds for that name: the kernel's cache of
# names serves every program of the host), then trainexec's readers.
LOOK = f"""
import os, sys
sys.path.insert(0, {ROOT!r})
from trainexec.records.completion import read_training_complete
from trainexec.records.finished_tasks import FinishedTasks
from trainexec.records.layout import make_watched_dir
model_dir = sys.argv[1]
make_watched_dir(model_dir + "/trainexec")  # as the evaluator starts, on NFS
print("os:", os.path.exists(model_dir + "/trainexec/other.json"))
done = read_training_complete(model_dir)
print("record:", None if done is None else done.global_step)
print("since:", FinishedTasks(model_dir, since_nsec=0).completed_since())
"""
WRITE = f"""
import sys
sys.path.insert(0, {ROOT!r})
from trainexec.records.completion import record_training_complete
record_training_complete(sys.argv[1], sys.argv[1] + "/ckpt-1200", 1200, 1200)
open(sys.argv[1] + "/trainexec/other.json", "w").close()
"""


def test_a_record_written_after_another_host_looked_for_it_is_read_at_once(tmp_path):
    shared = SharedDir(str(tmp_path / "backing"))  # NFS's defaults: negative look-ups 60 s
    with TestBed(["chief", "evaluator"], shared_dir=shared) as bed:
        model_dir = shared.on_hosts("model")
        os.makedirs(shared.on_machine(model_dir))  # trainexec/ not yet: a fresh model_dir

        def look() -> str:
            done = bed.run("evaluator", [sys.executable, "-c", LOOK, model_dir])
            assert done.returncode == 0, done.stderr[-2000:]
            return done.stdout

        assert look() == "os: False\nrecord: None\nsince: False\n"
        written = bed.run("chief", [sys.executable, "-c", WRITE, model_dir])
        assert written.returncode == 0, written.stderr[-2000:]
        # The evaluator host still takes the other file for missing (the view caches
        # failed look-ups as NFS does); trainexec's readers see the record at once.
        assert look() == "os: False\nrecord: 1200\nsince: True\n"
