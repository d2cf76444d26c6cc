"""trainexec/testing/faultfs.py: the plans a fault layer follows (what, until when, which
calls) and its plan file. The layer mounted under hosts' views, with real programs meeting
its faults: tests/cluster/test_testing_storage_faults.py."""

import errno
import threading
import time

import pytest

from trainexec.testing.faultfs import OPERATIONS, FaultPlan, PlanFile

pytestmark = pytest.mark.any_line


def test_a_plan_lasts_its_seconds_and_round_trips_through_its_file(tmp_path):
    plan = FaultPlan.lasting("errors", 5, errno_=errno.ESTALE, ops=("read", "getattr"))
    assert time.time() < plan.until <= time.time() + 5
    path = str(tmp_path / "plan.json")
    PlanFile.write(path, plan)
    assert PlanFile(path).plan() == plan
    PlanFile.write(path, None)
    assert PlanFile(path).plan() is None
    assert PlanFile(str(tmp_path / "none.json")).plan() is None


def test_overlapping_faults_write_the_plan_from_threads_of_their_own_without_a_clash(tmp_path):
    # Chaos seed 135 (NFS): two faults starting together replaced each other's
    # temporary file (one name per process) and one fault's thread died.
    path = str(tmp_path / "plan.json")
    errors = []

    def write(i):
        try:
            for _ in range(200):
                PlanFile.write(path, FaultPlan.lasting("slow", 1.0 + i, delay_secs=0.01))
        except OSError as err:
            errors.append(err)
    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert PlanFile(path).plan().mode == "slow"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # no temporary left


@pytest.mark.parametrize("make, words", [
    (lambda: FaultPlan("melt", until=1.0), "fault mode 'melt'"),
    (lambda: FaultPlan("errors", until=1.0, ops=("format",)), r"operations \['format'\]"),
    (lambda: FaultPlan("slow", until=1.0), "delay_secs > 0"),
    (lambda: FaultPlan.lasting("stall", 0), "give secs > 0"),
])
def test_a_bad_plan_says_why(make, words):
    with pytest.raises(ValueError, match=words):
        make()


def test_the_operations_cover_what_reads_and_writes_become():
    assert {"getattr", "open", "create", "read", "write", "rename", "unlink", "readdir",
            "fsync"} <= set(OPERATIONS)


def test_a_caller_being_killed_is_told_from_one_at_work():
    import os
    import subprocess
    import sys

    from trainexec.testing.faultfs import being_killed

    assert not being_killed(os.getpid())
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    assert being_killed(ended.pid)  # gone


def test_a_new_plan_of_the_same_size_and_file_time_is_read(tmp_path):
    # Two overlapping faults' plans written back to back can share a file time (the
    # kernel's clock tick) and a size; the layer must still follow the second.
    import os

    path = str(tmp_path / "plan.json")
    until = time.time() + 60
    first = FaultPlan("stall", until)  # an outage, then slowness: the same size
    second = FaultPlan("slow", until, delay_secs=0.05)
    PlanFile.write(path, first)
    layer = PlanFile(path)
    assert layer.plan() == first
    stat = os.stat(path)
    PlanFile.write(path, second)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(path).st_size == stat.st_size
    assert layer.plan() == second
