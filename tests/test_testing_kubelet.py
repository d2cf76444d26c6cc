"""trainexec/testing/kubelet.py: the TFJob operator's decisions (restart and success
policies, a fault's end played when a run closes) and where the test reads what pods
wrote on shared storage (storage.py's paths and NFS caching), without starting anything;
tests/cluster/test_chaos.py runs jobs (trainexec.testing.chaos)."""

import pytest

from trainexec.testing.kubelet import Pod, Replicas, TFJobRun, TFJobSpec
from trainexec.testing.storage import NFS_DEFAULTS, NfsCaching, SharedDir

pytestmark = pytest.mark.any_line

JOB = TFJobSpec("demo", {"Chief": Replicas(1), "Worker": Replicas(2), "PS": Replicas(1),
                         "Evaluator": Replicas(1)}, command=["python", "job.py"])


@pytest.mark.parametrize("policy, code, restarted", [
    ("ExitCode", 1, False), ("ExitCode", 2, False), ("ExitCode", 127, False),
    ("ExitCode", 128, True), ("ExitCode", 137, True), ("ExitCode", 143, True),
    ("ExitCode", 170, True), ("OnFailure", 1, True), ("Always", 2, True),
    ("Never", 137, False)])
def test_restart_policies_as_the_operator_applies_them(policy, code, restarted):
    assert TFJobRun._restarts(policy, code) is restarted


def _run_with_done(job, done):
    run = TFJobRun.__new__(TFJobRun)
    run.job = job
    run.pods = [Pod(t, i, job.pod_name(t, i), "ExitCode", done=(t, i) in done,
                    exit_code=0 if (t, i) in done else None) for t, i in job.pods()]
    return run


@pytest.mark.parametrize("replicas, policy, done, succeeded", [
    ({"Chief": Replicas(1), "Worker": Replicas(2)}, "", {("chief", 0)}, True),
    ({"Chief": Replicas(1), "Worker": Replicas(2)}, "", {("worker", 0), ("worker", 1)},
     False),
    ({"Worker": Replicas(2)}, "", {("worker", 0)}, True),  # worker:0 leads
    ({"Master": Replicas(1), "Worker": Replicas(1)}, "", {("master", 0)}, True),
    ({"Chief": Replicas(1), "Worker": Replicas(2)}, "AllWorkers", {("chief", 0)}, False),
    ({"Chief": Replicas(1), "Worker": Replicas(2)}, "AllWorkers",
     {("worker", 0), ("worker", 1)}, True),
])
def test_success_policy(replicas, policy, done, succeeded):
    job = TFJobSpec("demo", replicas, command=["x"], success_policy=policy)
    assert _run_with_done(job, done)._succeeded() is succeeded


def test_nfs_defaults_are_its_worst_case_as_fuse_timeouts():
    assert NFS_DEFAULTS == NfsCaching.from_nfs() == NfsCaching(60, 60, 60)
    assert NFS_DEFAULTS.fuse_options() == ("attr_timeout=60,entry_timeout=60,"
                                           "negative_timeout=60")
    assert NfsCaching.from_nfs(acregmax=10, acdirmax=30, lookupcache="positive") == \
        NfsCaching(attr_secs=10, entry_secs=30, negative_secs=0)
    assert NfsCaching.from_nfs(lookupcache="none") == NfsCaching(60, 0, 0)


@pytest.mark.parametrize("make, words", [
    (lambda: NfsCaching(attr_secs=-1), "attr_secs=-1: use a number of seconds >= 0"),
    (lambda: NfsCaching.from_nfs(lookupcache="some"), "lookupcache='some'"),
    (lambda: SharedDir("/tmp/x", mount_point="/tmp/x/view"), "must not contain each other"),
])
def test_bad_storage_settings_are_refused(make, words):
    with pytest.raises(ValueError, match=words.replace("(", "\\(").replace(")", "\\)")):
        make()


class _Bed:
    def __init__(self, shared_dir):
        self.shared_dir = shared_dir


def test_the_test_reads_the_backing_directory_of_what_pods_wrote_on_the_view():
    shared = SharedDir("/srv/backing", mount_point="/mnt/shared")
    assert shared.on_hosts("model", "ckpt") == "/mnt/shared/model/ckpt"
    run = TFJobRun.__new__(TFJobRun)
    run.bed = _Bed(shared)
    assert run.on_machine("/mnt/shared/model/ckpt") == "/srv/backing/model/ckpt"
    assert run.on_machine("/elsewhere/model") == "/elsewhere/model"  # not shared
    assert run.storage_env() == {}
    with pytest.raises(ValueError, match="is not under /mnt/shared"):
        shared.on_machine("/mnt/sharedx/y")
    run.bed = _Bed(None)
    assert run.on_machine("/mnt/shared/model") == "/mnt/shared/model"


@pytest.mark.parametrize("phase, restarted", [("Running", True), ("Succeeded", False),
                                              ("Failed", False)])
def test_a_pod_ending_after_the_job_ended_is_not_restarted(phase, restarted):
    # Chaos seed 3 (CI): a SIGTERM landed on worker:0 just after the chief succeeded;
    # the bed restarted it (exit 143, ExitCode) and its new program was left running.
    run = TFJobRun(JOB, bed=None, restart_delay_secs=60.0)
    run.phase = phase
    pod = run.pod("worker", 0)
    try:
        run._ended(pod, 143)
        assert (pod.restarts == 1) is restarted
        assert any(e.what == "restarting" for e in run.events) is restarted
    finally:
        for timer in run._timers:
            timer.cancel()


def test_a_pod_waiting_to_restart_stays_down_when_the_job_ends_meanwhile():
    run = TFJobRun(JOB, bed=None, restart_delay_secs=60.0)
    pod = run.pod("worker", 0)
    try:
        run._ended(pod, 137)  # restart due in 60 s
        assert pod.restarts == 1 and not pod.done
        run.phase = "Succeeded"  # the chief succeeded meanwhile
        run._restart(pod)  # the timer fires: nothing is started (bed=None would fail)
        assert pod.done and pod.proc is None
    finally:
        for timer in run._timers:
            timer.cancel()


class _Links:
    """A bed that only records its links going down and up."""

    def __init__(self):
        self.calls = []

    def link_down(self, host):
        self.calls.append(("down", host))

    def link_up(self, host):
        self.calls.append(("up", host))


def test_a_cut_still_in_force_when_the_run_closes_is_mended_once():
    # Chaos seed 136 (NFS): a full disk failed the job while the ps was cut off for
    # 3.2 s; the run closed, cancelling the link's mend, and the job submitted again on
    # the same bed found the ps still cut off and hung until its timeout.
    links = _Links()
    run = TFJobRun(JOB, bed=links, restart_delay_secs=60.0)
    run.partition("ps", 0, 60.0)
    run.close()
    assert links.calls == [("down", "demo-ps-0"), ("up", "demo-ps-0")]
    assert [e.detail for e in run.events if e.what == "fault"] == ["link down for 60s",
                                                                   "link up"]
    run.close()  # the end is played once
    assert links.calls.count(("up", "demo-ps-0")) == 1



def test_a_mend_that_fails_at_close_does_not_stop_the_others():
    class _Stuck(_Links):
        def link_up(self, host):
            super().link_up(host)
            if host == "demo-ps-0":
                raise RuntimeError("ip link set: no such device")

    links = _Stuck()
    run = TFJobRun(JOB, bed=links, restart_delay_secs=60.0)
    run.partition("ps", 0, 60.0)
    run.partition("evaluator", 0, 60.0)
    run.close()
    assert ("up", "demo-evaluator-0") in links.calls
