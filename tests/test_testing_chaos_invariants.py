"""trainexec/testing/chaos/invariants.py on its own: which exit codes are permanent, how a
violation reads, what the evidence tells of a pod and of the faults as applied, and each
invariant's edges (a fault that was never applied, the evidence's own bounds, a
checkpoint seen complete just after its evaluation, a pod restarted after a kill) on
evidence built as a run leaves it (tests/test_testing_chaos.py's good run, changed)."""

import dataclasses

import pytest

from test_testing_chaos import SCHEDULE, T0, good_evidence, names
from trainexec.testing.chaos.invariants import (AppliedFault, LogLine, PodEvent, PodExit,
                                                Violation, check, not_judged, permanent)
from trainexec.testing.chaos.schedule import Fault

pytestmark = pytest.mark.any_line

# The good run's two faults (a SIGTERM of worker:0, a cut of the chief), both at 25 s.
SIGTERM, CUT = good_evidence().applied


@pytest.mark.parametrize("code, is_permanent", [(0, False), (1, True), (74, True),
                                                (127, True), (128, False), (137, False),
                                                (143, False), (170, False)])
def test_only_codes_1_to_127_are_permanent_under_the_exit_code_policy(code, is_permanent):
    assert permanent(code) is is_permanent


def test_a_violation_reads_as_its_name_kind_seed_and_first_three_lines():
    safety = Violation("export", 7, ("a", "b", "c", "d"))
    assert safety.describe() == "export (safety, seed 7): a; b; c"
    assert not safety.liveness
    late = Violation("late-exit", None, ("demo-worker-1 ended 23.0s after",))
    assert late.liveness
    assert late.describe() == "late-exit (liveness, seed None): demo-worker-1 ended 23.0s after"


def test_a_fault_that_was_not_applied_neither_ends_late_nor_calls_for_a_restart():
    kill = AppliedFault(Fault("kill", "worker", 1, 5.0), T0 + 25.0, T0 + 25.0,
                        applied=False, detail="worker:1 had already exited")
    evidence = good_evidence(applied=(kill,), pod_events=good_evidence().pod_events[:4])
    assert evidence.last_fault_over is None
    assert not_judged(evidence) == {"restarted": "no pod was killed or preempted",
                                    "recovery": "no fault was applied"}
    assert check(evidence) == []
    # Applied, the same kill with no restart after it is a violation.
    assert names(good_evidence(applied=(dataclasses.replace(kill, applied=True),),
                               pod_events=good_evidence().pod_events[:4])) == ["restarted"]


def test_a_killed_pod_restarted_after_the_kill_keeps_the_promise():
    kill = AppliedFault(Fault("kill", "worker", 1, 5.0), T0 + 30.0, T0 + 30.0)
    restarted = good_evidence().pod_events + (PodEvent("demo-worker-1", T0 + 30.4,
                                                       "restarting"),)
    assert names(good_evidence(applied=(SIGTERM, CUT, kill), pod_events=restarted)) == []
    # A restart seen before the kill does not count for it.
    early = good_evidence().pod_events + (PodEvent("demo-worker-1", T0 + 12.0, "restarting"),)
    [violation] = check(good_evidence(applied=(SIGTERM, CUT, kill), pod_events=early))
    assert violation.name == "restarted"
    assert violation.evidence[0].startswith(
        "kill worker:1 at 5s at 30.0s, and demo-worker-1 was not restarted")
    # A kill after the job was over: nothing restarts a pod then.
    over = dataclasses.replace(kill, at=T0 + 61.0, ends=T0 + 61.0)
    assert "restarted" not in names(good_evidence(applied=(SIGTERM, CUT, over)))
    # Nor one sent just before the job ended whose program went down only after the end
    # (regression seed 48 at stop 59's CI: SIGTERM at 25.1 s, the chief's exit between,
    # the worker's 143 at 25.3 s).
    last = dataclasses.replace(kill, at=T0 + 59.8, ends=T0 + 59.8)
    down_after = good_evidence().exits + (PodExit("demo-worker-1", T0 + 60.2, 143),)
    assert "restarted" not in names(good_evidence(applied=(SIGTERM, CUT, last),
                                                  exits=down_after))
    # Down after the end but long after the fault, it went down by the end, not the fault.
    late = good_evidence().exits + (PodExit("demo-worker-1", T0 + 60.2, 143),)
    early_kill = dataclasses.replace(kill, at=T0 + 40.0, ends=T0 + 40.0)
    assert names(good_evidence(applied=(SIGTERM, CUT, early_kill), exits=late)) == [
        "restarted"]
    # Down before the end, and not restarted, it is still a violation.
    down_before = good_evidence().exits + (PodExit("demo-worker-1", T0 + 59.9, 143),)
    assert names(good_evidence(applied=(SIGTERM, CUT, last), exits=down_before)) == [
        "restarted"]


def test_a_failed_job_with_no_permanent_exit_still_names_its_reason_and_log():
    evidence = good_evidence(phase="Failed", reason="BackoffLimitExceeded",
                             exits=(PodExit("demo-worker-0", T0 + 25.0, 137),))
    [violation] = check(evidence)
    assert violation.name == "outcome" and violation.seed == 42
    assert violation.evidence == ("job Failed (every fault was recoverable): "
                                  "BackoffLimitExceeded", "log: /w/pods.log")


def test_a_run_without_any_checkpoint_says_so():
    evidence = good_evidence(newest_checkpoint=None, newest_step=0, final_step_at=None,
                             result=None)
    found = {v.name: v.evidence for v in check(evidence)}
    assert found["final-step"] == ("newest checkpoint none (step 0) < max_steps 1200",
                                   "evaluator's result: none")
    assert found["final-evaluated"] == ("no checkpoint at all",)


def test_a_checkpoint_seen_complete_within_the_watchers_slack_counts_as_whole():
    # ckpt-1100 was evaluated at 50 s; the watcher polls, so "complete at 51.5 s" is fine.
    assert names(good_evidence(complete_at={"ckpt-1100": T0 + 51.5,
                                            "ckpt-1200": T0 + 57.0})) == []
    [violation] = check(good_evidence(complete_at={"ckpt-1100": T0 + 53.0,
                                                   "ckpt-1200": T0 + 57.0}))
    assert violation.name == "half-checkpoint"
    assert violation.evidence[0] == "evaluated ckpt-1100 at 50.0s, complete only at 53.0s"


def test_the_evidences_own_bound_decides_a_late_exit_and_the_text_names_its_anchor():
    # The good run's chief succeeds at 60 s; worker-1 ends at 62 s, the evaluator at 64 s.
    tight = good_evidence(bound_secs=1.5)
    assert [v.evidence[0] for v in check(tight) if v.name == "late-exit"] == [
        "demo-evaluator-0 ended 4.0s after the chief succeeded (bound 1.5s)",
        "demo-worker-1 ended 2.0s after the chief succeeded (bound 1.5s)"]
    # A cut lasting past the chief's success: the bound counts from its end.
    long_cut = AppliedFault(Fault("cut", "worker", 1, 30.0, 40.0), T0 + 50.0, T0 + 90.0)
    later = good_evidence(bound_secs=1.5, applied=(SIGTERM, CUT, long_cut),
                          exits=good_evidence().exits + (PodExit("demo-worker-1",
                                                                 T0 + 93.0, 0),))
    [violation] = check(later)
    assert violation.evidence[0] == ("demo-worker-1 ended 3.0s after the last fault ended "
                                     "(bound 1.5s)")


def test_a_late_pod_that_names_a_task_it_waited_for_reports_that_tasks_life_and_lines():
    # worker-1 (serving, say) ends late, its last line naming worker:0, which the good
    # run SIGTERMed at 25 s and restarted: the report carries worker-0's story.
    lines = (LogLine(T0 + 40.0, "worker:0", "Waiting 2 secs before starting training."),
             LogLine(T0 + 61.5, "worker:1", "worker:1 stops serving: worker:0 did not "
                     "record finishing within 30s after that"))
    [violation] = [v for v in check(good_evidence(bound_secs=1.5, lines=lines))
                   if v.evidence[0].startswith("demo-worker-1")]
    assert violation.evidence[1:] == (
        "61.5s [worker:1] worker:1 stops serving: worker:0 did not record finishing "
        "within 30s after that",
        "demo-worker-0: started at 1.0s, exited 143 at 25.0s, restarting at 25.2s, "
        "started at 26.0s, exited 0 at 61.0s",
        "40.0s [worker:0] Waiting 2 secs before starting training.")
    # worker:10 is not worker:1, nor is chief:05 chief:0.
    unnamed = (LogLine(T0 + 63.5, "evaluator:0", "waits for worker:10 and chief:05"),)
    [other] = [v for v in check(good_evidence(bound_secs=1.5, lines=unnamed))
               if v.evidence[0].startswith("demo-evaluator-0")]
    assert len(other.evidence) == 2
    # A late pod naming no other task reports its own lines only.
    plain = good_evidence(bound_secs=1.5)
    [alone] = [v for v in check(plain) if v.evidence[0].startswith("demo-evaluator-0")]
    assert alone.evidence[1:] == tuple(plain.tail("evaluator:0", 4))
    assert len(alone.evidence) == 2


def test_recovery_counts_from_a_pod_started_after_the_faults_when_that_is_later():
    # The last fault ends at 31 s; the next checkpoint after step 700 comes at 65 s.
    complete = {"ckpt-700": T0 + 24.0, "ckpt-1100": T0 + 65.0, "ckpt-1200": T0 + 66.0}
    slow = good_evidence(complete_at=complete, evaluated=())
    [violation] = [v for v in check(slow) if v.name == "recovery"]
    assert violation.evidence[0] == ("training went on 34.0s after the last fault ended or "
                                     "the last pod started (at 31.0s, step 700; bound 30s)")
    # A pod that started again at 40 s had 25 s: in time. A restart notice is no start.
    for what, late in (("started", False), ("restarting", True)):
        events = good_evidence().pod_events + (PodEvent("demo-worker-1", T0 + 40.0, what),)
        assert ("recovery" in names(dataclasses.replace(slow, pod_events=events))) is late
    # With the evidence's own bound a little longer, the same run recovered in time.
    assert "recovery" not in names(dataclasses.replace(slow, recovery_secs=35.0))


def test_pods_of_a_job_whose_name_has_hyphens_are_matched_to_their_tasks():
    def renamed(items):
        return tuple(dataclasses.replace(i, pod=i.pod.replace("demo-", "mnist-e2e-"))
                     for i in items)

    lines = (LogLine(T0 + 62.5, "worker:1", "OSError: [Errno 28] No space left on device"),
             LogLine(T0 + 62.6, "chief:0", "all done"))
    evidence = good_evidence(chief="mnist-e2e-chief-0", lines=lines,
                             pod_events=renamed(good_evidence().pod_events),
                             exits=renamed(good_evidence().exits) + (
                                 PodExit("mnist-e2e-worker-1", T0 + 63.0, 1),))
    # worker:0's restart after its SIGTERM is found under mnist-e2e-worker-0.
    [violation] = check(evidence)
    assert violation.name == "outcome"
    assert violation.evidence == (
        "mnist-e2e-worker-1 exited 1 (permanent under ExitCode) at 63.0s",
        "62.5s [worker:1] OSError: [Errno 28] No space left on device")


def test_a_job_without_an_evaluator_judges_its_other_invariants_still():
    schedule = dataclasses.replace(SCHEDULE, evaluator=False)
    evidence = good_evidence(schedule=schedule, evaluated=(), exports=(),
                             newest_checkpoint="ckpt-1100", newest_step=1100,
                             still_running=("demo-worker-1",))
    assert names(evidence) == ["final-step", "processes-left"]
    assert not_judged(evidence)["export"] == "the job has no evaluator"
