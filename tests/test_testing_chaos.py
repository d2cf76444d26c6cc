"""trainexec/testing/chaos: the seeded schedules, the kept regressions, the invariants
on evidence made by hand, and the CLI's parsing, without starting anything;
tests/cluster/test_chaos.py runs schedules on the multi-host bed."""

import dataclasses
import io
import json
import os
import signal

import pytest

from trainexec.testing.chaos import (KINDS, REGRESSIONS, Evidence, Fault, Schedule, check,
                                     parse_seeds)
from trainexec.testing.chaos.schedule import ALL_KINDS, MODES
from trainexec.testing.chaos import cli
from trainexec.testing.chaos.invariants import (BOUND_SECS, LIVENESS, SAFETY, AppliedFault,
                                                Evaluated, ExportDir, LogLine, PodEvent,
                                                PodExit)
from trainexec.testing.chaos.runner import mode_unavailable

pytestmark = pytest.mark.any_line

SEEDS = range(1, 41)


# -- schedules --------------------------------------------------------------------------
def test_a_seed_always_gives_the_same_schedule():
    for seed in (1, 7, 31):
        assert Schedule.generate(seed) == Schedule.generate(seed)
    assert len({Schedule.generate(s).describe() for s in SEEDS}) == len(SEEDS)


def test_the_generator_depends_on_the_seed_only():
    import random

    random.seed(123)
    first = Schedule.generate(5, modes=("mwms", "pss"))
    random.seed(456)
    assert Schedule.generate(5, modes=("mwms", "pss")) == first


def test_seeds_cover_every_kind_role_overlap_mode_and_storage():
    schedules = [Schedule.generate(s) for s in SEEDS]
    faults = [f for s in schedules for f in s.faults]
    assert {f.kind for f in faults} == set(KINDS)
    assert {f.task_type for f in faults} == {"chief", "worker", "ps", "evaluator"}
    assert sum(bool(s.overlaps()) for s in schedules) >= 10
    assert {s.mode for s in schedules} == {"mwms", "pss", "estimator", "native-estimator"}
    assert {s.storage for s in schedules} == {"local", "nfs"}
    assert all(2 <= len(s.faults) <= 4 for s in schedules)


def test_generated_faults_fit_the_shape_and_are_in_time_order():
    for seed in SEEDS:
        schedule = Schedule.generate(seed, modes=("mwms",), faults=(1, 6))
        assert schedule.mode == "mwms" and schedule.ps == 0
        assert all(f.task_type != "ps" for f in schedule.faults)
        times = [f.at_secs for f in schedule.faults]
        assert times == sorted(times)
        for f in schedule.faults:
            assert (f.duration_secs > 0) == (f.kind in ("freeze", "cut"))


def test_ps_modes_get_a_ps_and_their_faults_reach_it():
    schedules = [Schedule.generate(s, modes=("pss",)) for s in SEEDS]
    assert all(s.ps == 1 for s in schedules)
    assert any(f.task_type == "ps" for s in schedules for f in s.faults)


def test_an_overlap_starts_while_an_earlier_freeze_or_cut_is_in_force():
    schedule = Schedule.explicit("mwms", ["cut chief:0 at 7.7s for 12.9s",
                                          "sigterm worker:0 at 7.7s",
                                          "kill worker:1 at 21s"])
    assert [(a.task, b.task) for a, b in schedule.overlaps()] == [("chief:0", "worker:0")]
    assert schedule.last_fault_end_secs == pytest.approx(21.0)


def test_a_fault_round_trips_through_its_description():
    for seed in SEEDS:
        for storages in (("local",), ("gs", "nfs")):
            for fault in Schedule.generate(seed, storages=storages, kinds=ALL_KINDS).faults:
                assert Fault.parse(fault.describe()) == fault


def test_storage_faults_are_drawn_only_where_the_storage_has_them():
    drawn = [Schedule.generate(s, storages=("local", "gs", "nfs"), kinds=ALL_KINDS)
             for s in SEEDS]
    storage_faults = [(s.storage, f) for s in drawn for f in s.faults if f.on_storage]
    assert storage_faults and {st for st, _ in storage_faults} <= {"gs", "nfs"}
    assert all(f.kind != "disk-full" for st, f in storage_faults if st == "gs")
    assert all(f.task == "storage:0" and f.duration_secs > 0 for _, f in storage_faults)
    assert {f.detail for st, f in storage_faults if f.kind == "storage-errors"} <= {
        "503", "429", "500", "EIO", "ESTALE"}
    # By default a seed draws a pod's faults only, as it always did.
    assert all(not f.on_storage for s in SEEDS for f in Schedule.generate(
        s, storages=("gs", "nfs")).faults)


def test_explicit_schedules_round_trip_through_dicts_and_json():
    for schedule in [*REGRESSIONS.values(), Schedule.generate(9)]:
        data = json.loads(json.dumps(schedule.to_dict()))
        assert Schedule.from_dict(data) == schedule


@pytest.mark.parametrize("make, words", [
    (lambda: Fault("explode", "worker", 0, 1.0), "fault kind 'explode'"),
    (lambda: Fault("freeze", "worker", 0, 1.0), "duration_secs > 0"),
    (lambda: Fault("kill", "worker", 0, 1.0, 2.0), "instantaneous"),
    (lambda: Fault("kill", "worker", 0, -1.0), "at_secs"),
    (lambda: Fault.parse("kill the chief"), "KIND TYPE:INDEX at SECS"),
    (lambda: Schedule.explicit("mwms", ["kill ps:0 at 3s"]), "has no ps:0"),
    (lambda: Schedule.explicit("mwms", ["kill worker:2 at 3s"]), "has no worker:2"),
    (lambda: Schedule(1, "pss"), "needs a ps"),
    (lambda: Schedule(1, "mwms", ps=1), "no ps"),
    (lambda: Schedule(1, "mwms", storage="s3"), "storage 's3'"),
    (lambda: Schedule.generate(1, faults=(3, 2)), "low <= high"),
    (lambda: Schedule.explicit("mwms", ["disk-full storage:0 at 3s for 5s"], storage="gs"),
     "gs storage has only"),
    (lambda: Schedule.explicit("mwms", ["storage-outage storage:0 at 3s for 5s"]),
     "local storage has only"),
    (lambda: Fault("kill", "storage", 0, 1.0), "a storage fault's task is storage:0"),
    (lambda: Fault("storage-errors", "worker", 0, 1.0, 2.0), "a storage fault's task"),
])
def test_bad_schedules_are_refused_saying_why(make, words):
    with pytest.raises(ValueError, match=words):
        make()


def test_describe_reads_as_one_line():
    line = REGRESSIONS["seed-3"].describe()
    assert line == ("regression seed 3: mwms (chief, 2 workers, evaluator) on local, "
                    "2400 steps: "
                    "cut chief:0 at 7.7s for 12.9s; sigterm worker:0 at 7.7s "
                    "(1 overlapping)")


def test_the_issues_regressions_are_kept_with_their_faults():
    assert set(REGRESSIONS) == {"seed-1", "seed-3", "seed-14", "seed-28", "seed-31",
                                "native-estimator-14", "estimator-48", "mwms-worker-stayed"}
    # Issue 46's: the worker that stayed 25 s after its job, on 5,000 steps.
    stayed = REGRESSIONS["mwms-worker-stayed"]
    assert (stayed.mode, stayed.workers, stayed.max_steps) == ("mwms", 2, 5000)
    assert [f.describe() for f in stayed.faults] == [
        "freeze worker:1 at 13.7s for 15.2s", "freeze worker:0 at 14.2s for 16.5s",
        "cut evaluator:0 at 26.9s for 16s"]
    # The ps jobs' two, as the first generator (faults 3-20 s in) drew them.
    assert REGRESSIONS["estimator-48"].describe().endswith(
        "freeze evaluator:0 at 6.3s for 13.4s; kill ps:0 at 6.7s; sigterm ps:0 at 11.4s; "
        "sigterm worker:0 at 17.9s (3 overlapping)")
    assert REGRESSIONS["native-estimator-14"].ps == 1
    assert REGRESSIONS["seed-31"].storage == "nfs"
    seed28 = REGRESSIONS["seed-28"].faults
    assert [f.describe() for f in seed28] == [
        "sigterm worker:0 at 7.6s", "sigterm chief:0 at 7.9s",
        "freeze worker:0 at 8.5s for 5.2s", "cut worker:0 at 9.4s for 5.8s"]


@pytest.mark.parametrize("text, seeds", [("1-5", [1, 2, 3, 4, 5]), ("3,14,28", [3, 14, 28]),
                                         ("1-3,2,31", [1, 2, 3, 31])])
def test_seed_lists(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "5-1", "a-b"])
def test_bad_seed_lists_are_refused(text):
    with pytest.raises(ValueError):
        parse_seeds(text)


# -- invariants on evidence made by hand ------------------------------------------------
T0 = 1000.0
SCHEDULE = Schedule.explicit("mwms", ["sigterm worker:0 at 5s", "cut chief:0 at 5s for 6s"],
                             seed=42)
PODS = ("demo-chief-0", "demo-worker-0", "demo-worker-1", "demo-evaluator-0")


def _line(at, task, text):
    return LogLine(T0 + at, task, text)


def good_evidence(**changes) -> Evidence:
    """A run that kept every promise: success at 60 s, every pod ended by 64 s."""
    final = _line(59.0, "evaluator:0", "[evaluator:0] INFO trainexec.evaluation.loop: "
                  "Evaluated /m/ckpt-1200 (step 1200) in 0.4s: loss = 0.07")
    evidence = Evidence(
        schedule=SCHEDULE, max_steps=1200, phase="Succeeded", reason="demo-chief-0 succeeded",
        started=T0, ended=T0 + 60.0,
        exits=(PodExit("demo-worker-0", T0 + 25.0, 143), PodExit("demo-chief-0", T0 + 60.0, 0),
               PodExit("demo-worker-0", T0 + 61.0, 0), PodExit("demo-worker-1", T0 + 62.0, 0),
               PodExit("demo-evaluator-0", T0 + 64.0, 0)),
        restarts={"demo-worker-0": 1}, still_running=(), chief="demo-chief-0",
        applied=(AppliedFault(SCHEDULE.faults[0], T0 + 25.0, T0 + 25.0),
                 AppliedFault(SCHEDULE.faults[1], T0 + 25.0, T0 + 31.0)),
        training_began=T0 + 20.0, newest_checkpoint="ckpt-1200", newest_step=1200,
        final_step_at=T0 + 57.0,
        evaluated=(Evaluated("/m/ckpt-1100", 1100, _line(50.0, "evaluator:0", "Evaluated")),
                   Evaluated("/m/ckpt-1200", 1200, final)),
        complete_at={"ckpt-1100": T0 + 49.9, "ckpt-1200": T0 + 57.0},
        exports=(ExportDir("/m/export/final/1200", True),),
        result={"metrics": {"global_step": 1200.0}},
        lines=(_line(24.0, "worker:0", "step 700"), final), log_path="/w/pods.log",
        pod_events=(*(PodEvent(pod, T0 + 1.0, "started") for pod in PODS),
                    PodEvent("demo-worker-0", T0 + 25.2, "restarting"),
                    PodEvent("demo-worker-0", T0 + 26.0, "started")))
    return dataclasses.replace(evidence, **changes)


def names(evidence):
    return [v.name for v in check(evidence)]


def test_a_run_that_kept_every_promise_has_no_violation():
    assert check(good_evidence()) == []


def test_overshoot_past_max_steps_is_not_a_violation():
    assert names(good_evidence(newest_checkpoint="ckpt-1201", newest_step=1201)) == []


def test_a_failed_job_after_recoverable_faults_names_the_permanent_exit():
    evidence = good_evidence(
        phase="Failed", reason="demo-worker-0 failed with exit code 1 (restartPolicy ExitCode)",
        exits=(PodExit("demo-worker-0", T0 + 25.0, 1),),
        lines=(_line(24.9, "worker:0", "RuntimeError: UnavailableError: Socket closed"),))
    [violation] = [v for v in check(evidence) if v.name == "outcome"]
    assert violation.seed == 42 and not violation.liveness
    text = "\n".join(violation.evidence)
    assert "every fault was recoverable" in text and "exited 1" in text
    assert "Socket closed" in text and "/w/pods.log" in text


def test_a_permanent_exit_after_the_jobs_success_is_still_an_outcome_violation():
    evidence = good_evidence(exits=good_evidence().exits + (
        PodExit("demo-worker-1", T0 + 63.0, 1),))
    assert names(evidence) == ["outcome"]


def test_a_final_step_short_of_max_steps():
    evidence = good_evidence(newest_checkpoint="ckpt-1100", newest_step=1100,
                             final_step_at=None)
    assert names(evidence) == ["final-step"]


def test_the_final_checkpoint_not_evaluated():
    evidence = good_evidence(evaluated=good_evidence().evaluated[:1])
    [violation] = check(evidence)
    assert violation.name == "final-evaluated"
    assert "ckpt-1200 was not evaluated" in violation.evidence[0]


@pytest.mark.parametrize("exports, words", [
    ((), "0 whole final exports"),
    ((ExportDir("/m/export/final/1200", True), ExportDir("/m/export/final/1300", True)),
     "2 whole final exports"),
    ((ExportDir("/m/export/final/1200", False, ("saved_model.pb",)),),
     "missing saved_model.pb"),
])
def test_not_exactly_one_whole_export(exports, words):
    [violation] = check(good_evidence(exports=exports))
    assert violation.name == "export" and words in " ".join(violation.evidence)


def test_a_checkpoint_evaluated_before_it_was_complete():
    never = good_evidence(complete_at={"ckpt-1200": T0 + 57.0})
    [violation] = check(never)
    assert violation.name == "half-checkpoint" and "ckpt-1100" in violation.evidence[0]
    later = good_evidence(complete_at={"ckpt-1100": T0 + 55.0, "ckpt-1200": T0 + 57.0})
    assert names(later) == ["half-checkpoint"]


def test_a_process_left_running_is_a_safety_violation():
    evidence = good_evidence(still_running=("demo-worker-1",))
    [violation] = check(evidence)
    assert violation.name == "processes-left" and not violation.liveness
    # What the lingering pod's own lines cannot tell, in time order: the faults, the
    # pods' starts and exits, the job's end (a CI failure then explains itself).
    told = list(violation.evidence)
    for words in (f"25.0s fault {SCHEDULE.faults[0].describe()}", "26.0s demo-worker-0 started",
                  "57.0s a checkpoint at max_steps 1200 is whole",
                  "60.0s job Succeeded: demo-chief-0 succeeded", "62.0s demo-worker-1 exited 0"):
        assert any(line.startswith(words) for line in told), (words, told)
    assert told.index("60.0s demo-chief-0 exited 0") < told.index("61.0s demo-worker-0 exited 0")


def test_a_pod_ending_past_the_bound_is_a_liveness_violation():
    late = good_evidence(exits=good_evidence().exits + (
        PodExit("demo-worker-1", T0 + 60.0 + BOUND_SECS + 3.0, 0),))
    [violation] = check(late)
    assert violation.name == "late-exit" and violation.liveness
    assert (f"demo-worker-1 ended {BOUND_SECS + 3.0:.1f}s after the chief succeeded"
            in violation.evidence[0])


def test_the_bound_counts_from_the_last_faults_end_when_it_is_later():
    long_cut = AppliedFault(Fault("cut", "worker", 1, 30.0, 40.0), T0 + 50.0, T0 + 90.0)
    evidence = good_evidence(applied=good_evidence().applied + (long_cut,),
                             exits=good_evidence().exits + (
                                 PodExit("demo-worker-1", T0 + 95.0, 0),))
    assert names(evidence) == []
    later = dataclasses.replace(evidence, exits=evidence.exits + (
        PodExit("demo-worker-1", T0 + 90.0 + BOUND_SECS + 1.0, 0),))
    assert names(later) == ["late-exit"]


def test_a_storage_outage_counts_until_a_request_begun_in_it_gives_up():
    # A gs:// outage 10-50 s; the chief, whose request could not connect while the
    # bucket was silent, succeeds 29 s after the final checkpoint and the outage.
    outage = AppliedFault(Fault("storage-outage", "storage", 0, 10.0, 40.0), T0 + 10.0,
                          T0 + 50.0, lingers_secs=35.0)
    late_chief = good_evidence(applied=good_evidence().applied + (outage,),
                               final_step_at=T0 + 51.0, ended=T0 + 80.0,
                               exits=good_evidence().exits + (
                                   PodExit("demo-chief-0", T0 + 80.0, 0),))
    assert late_chief.last_fault_over == T0 + 85.0
    assert names(late_chief) == []
    # Without the settling time (another storage, or another kind), the same is late.
    [violation] = check(dataclasses.replace(late_chief, applied=good_evidence().applied + (
        dataclasses.replace(outage, lingers_secs=0.0),)))
    assert violation.name == "chief-late"
    assert "(or the last fault ended; bound" in violation.evidence[0]
    # Past the settling time too, the chief is late, and the line says what was counted.
    [violation] = check(dataclasses.replace(late_chief, ended=T0 + 110.0))
    assert violation.name == "chief-late"
    assert ("(or the last fault ended and 35s more for a request begun in it to give up"
            in violation.evidence[0])


def test_a_chief_that_ends_long_after_the_final_checkpoint_is_late():
    evidence = good_evidence(final_step_at=T0 + 60.0 - BOUND_SECS - 1.0)
    [violation] = check(evidence)
    assert violation.name == "chief-late" and violation.liveness


def test_a_preempted_pod_that_was_not_restarted():
    evidence = good_evidence(pod_events=good_evidence().pod_events[:4])
    [violation] = check(evidence)
    assert violation.name == "restarted" and not violation.liveness
    assert ("sigterm worker:0 at 5s at 25.0s, and demo-worker-0 was not restarted"
            in violation.evidence[0])


def test_a_pod_preempted_as_its_role_ended_need_not_restart():
    exits = ((PodExit("demo-worker-0", T0 + 25.0, 0),) + good_evidence().exits[1:3]
             + good_evidence().exits[4:])
    evidence = good_evidence(pod_events=good_evidence().pod_events[:4], exits=exits)
    assert "restarted" not in names(evidence)


def test_training_that_does_not_go_on_after_the_faults_misses_recovery():
    # The last fault ends at 31 s; the next checkpoint only at 31 + 30 + 5 s.
    slow = good_evidence(complete_at={"ckpt-1100": T0 + 66.0, "ckpt-1200": T0 + 67.0},
                         evaluated=(), newest_checkpoint="ckpt-1200")
    violation = next(v for v in check(slow) if v.name == "recovery")
    assert violation.liveness and "training went on 35.0s after" in violation.evidence[0]
    done = good_evidence(complete_at={"ckpt-1200": T0 + 20.0}, evaluated=())
    assert "recovery" not in names(done)  # max_steps reached before the faults ended


def test_a_full_disk_may_stop_the_job_with_the_storage_code_until_it_is_resubmitted():
    full = AppliedFault(Fault("disk-full", "storage", 0, 30.0, 5.0), T0 + 45.0, T0 + 50.0)
    stopped = good_evidence(applied=good_evidence().applied + (full,), resubmitted=True,
                            exits=good_evidence().exits + (
                                PodExit("demo-chief-0", T0 + 46.0, 74),))
    assert "outcome" not in names(stopped)
    # Any other permanent code is still a violation, and so is 74 without a full disk.
    other = dataclasses.replace(stopped, exits=stopped.exits + (
        PodExit("demo-worker-1", T0 + 46.0, 1),))
    assert "outcome" in names(other)
    assert "outcome" in names(good_evidence(exits=good_evidence().exits + (
        PodExit("demo-chief-0", T0 + 46.0, 74),)))
    # A job that failed under a full disk by another permanent code, or whose
    # resubmission failed, broke the promise too.
    for code in (1, 74):
        failed = dataclasses.replace(stopped, phase="Failed", reason="demo-chief-0 failed",
                                     exits=good_evidence().exits[:1] + (
                                         PodExit("demo-chief-0", T0 + 46.0, code),))
        assert "outcome" in names(failed), code


def test_safety_violations_come_before_liveness_ones():
    evidence = good_evidence(still_running=("demo-worker-1",),
                             final_step_at=T0 + 60.0 - BOUND_SECS - 1.0)
    assert names(evidence) == ["processes-left", "chief-late"]
    assert set(SAFETY).isdisjoint(LIVENESS)


# -- what the runner reads --------------------------------------------------------------
# -- the CLI ------------------------------------------------------------------------------
def test_the_cli_prints_the_schedules_it_would_run(monkeypatch):
    out = io.StringIO()
    code = cli.main(["--seeds", "1-3", "--modes", "mwms,pss", "--storage", "local,nfs",
                     "--dry-run"], out=out)
    assert code == 0
    lines = out.getvalue().splitlines()
    assert lines == [Schedule.generate(s, modes=("mwms", "pss"),
                                       storages=("local", "nfs")).describe()
                     for s in (1, 2, 3)]


def test_the_cli_replays_one_seed_and_the_regressions():
    out = io.StringIO()
    assert cli.main(["--seed", "2", "--modes", "pss", "--dry-run"], out=out) == 0
    assert out.getvalue().startswith("seed 2: pss")
    out = io.StringIO()
    assert cli.main(["--regression", "all", "--dry-run"], out=out) == 0
    # "all": the ones whose job runs on this TensorFlow line.
    runnable = [s for s in REGRESSIONS.values() if mode_unavailable(s.mode) is None]
    assert out.getvalue().splitlines() == [s.describe() for s in runnable]
    assert runnable  # every line runs some: MWMS ones on current TF, estimator-48 on 2.15


def test_the_cli_runs_a_written_schedule_for_each_mode_and_storage_as_often_as_asked():
    out = io.StringIO()
    written = ("storage-errors storage:0 at 2s for 20s; "
               "storage-outage storage:0 at 30s for 50s; kill worker:1 at 3s")
    assert cli.main(["--schedule", written, "--modes", "mwms,pss", "--storage", "gs,nfs",
                     "--repeat", "2", "--dry-run"], out=out) == 0
    faults = [Fault.parse("storage-errors storage:0 at 2s for 20s"),
              Fault.parse("storage-outage storage:0 at 30s for 50s"),
              Fault.parse("kill worker:1 at 3s")]
    expected = [Schedule.explicit(mode, faults, storage=storage,
                                  name=f"written with --schedule, run {k} of 2").describe()
                for mode in ("mwms", "pss") for storage in ("gs", "nfs") for k in (1, 2)]
    assert out.getvalue().splitlines() == expected
    once = io.StringIO()
    assert cli.main(["--schedule", "kill worker:1 at 3s", "--modes", "mwms", "--dry-run"],
                    out=once) == 0
    assert once.getvalue().startswith("written with --schedule: mwms")


@pytest.mark.parametrize("argv, words", [
    (["--schedule", " ; "], "name at least one fault"),
    (["--schedule", ""], "name at least one fault"),  # not the seeded default
    (["--schedule", "kill worker:0 at soon"], "write it as KIND TYPE:INDEX"),
    (["--schedule", "kill worker:0 at 1.2.3s"], "write it as KIND TYPE:INDEX"),
    (["--schedule", "kill ps:0 at 3s", "--modes", "mwms"],
     "with --modes mwms --storage local: fault 'kill ps:0 at 3s': this job has no ps:0"),
    (["--schedule", "disk-full storage:0 at 3s for 5s", "--modes", "pss", "--storage", "gs"],
     "gs storage has only"),
    # A detail the storage cannot apply would be skipped at run time: refused here.
    (["--schedule", "storage-errors storage:0 at 2s for 5s with EIO", "--modes", "pss",
      "--storage", "gs"], "gs:// answers an HTTP status"),
    (["--schedule", "storage-errors storage:0 at 2s for 5s with 503", "--modes", "pss",
      "--storage", "nfs"], "a file server fails with an errno"),
    (["--schedule", "storage-slow storage:0 at 2s for 5s with fast", "--modes", "pss",
      "--storage", "gs"], "slow answers take seconds"),
    (["--schedule", "storage-outage storage:0 at 2s for 5s with 503", "--modes", "pss",
      "--storage", "gs"], "takes no 'with ...'"),
    (["--seed", "2", "--repeat", "0"], "--repeat 0"),
])
def test_the_cli_refuses_a_bad_written_schedule_or_repeat_saying_why(argv, words, capsys):
    assert cli.main([*argv, "--dry-run"], out=io.StringIO()) == 2
    assert words in capsys.readouterr().err


class _RunWithoutFaults:
    """What the CLI reads of a report (`ChaosReport`), for a run that never started."""

    def __init__(self, schedule):
        self.violations, self.safety, self.liveness, self.not_judged = [], [], [], {}
        self.run_secs, self.restarts_by_fault, self.schedule = 0.0, {}, schedule

    def row(self):
        return {c: "-" for c in cli.COLUMNS} | {"seed": self.schedule.label()}


def test_the_cli_ends_on_sigterm_while_it_runs_and_gives_back_the_callers_handler(
        monkeypatch, tmp_path):
    def mine(signum, frame):
        pass

    def run(schedule, run_dir, **kwargs):
        assert signal.getsignal(signal.SIGTERM) is cli._exit_on_sigterm
        if schedule.seed == 3:  # a `kill` of the CLI while it runs its second schedule
            os.kill(os.getpid(), signal.SIGTERM)
        return _RunWithoutFaults(schedule)

    monkeypatch.setattr(cli, "run_schedule", run)
    monkeypatch.setattr(cli, "_unavailable", lambda schedules: None)
    before = signal.signal(signal.SIGTERM, mine)
    try:
        argv = ["--modes", "pss", "--workdir", str(tmp_path)]
        assert cli.main(["--seed", "2", *argv], out=io.StringIO()) == 0
        assert signal.getsignal(signal.SIGTERM) is mine
        with pytest.raises(SystemExit) as ended:
            cli.main(["--seeds", "2-4", *argv], out=io.StringIO())
        assert ended.value.code == 143  # as a shell reports a process ended by SIGTERM
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.mark.parametrize("argv, words", [
    (["--modes", "tpu"], "--modes 'tpu'"), (["--storage", "s3"], "--storage 's3'"),
    (["--faults", "x"], "--faults 'x'"), (["--regression", "seed-99"], "seed-99"),
    (["--seeds", "5-1"], "backwards")])
def test_the_cli_refuses_bad_options_with_exit_2(argv, words, capsys):
    assert cli.main([*argv, "--dry-run"], out=io.StringIO()) == 2
    assert words in capsys.readouterr().err


def test_the_table_lines_up():
    rows = [{"seed": "seed 1", "shape": "mwms", "faults": "kill chief:0 at 3s",
             "outcome": "Succeeded", "restarts": "3", "wall": "61s", "violations": "-"},
            {"seed": "seed 12", "shape": "pss", "faults": "x" * 100, "outcome": "Failed",
             "restarts": "0", "wall": "?", "violations": "outcome"}]
    table = cli.format_table(rows, width=30).splitlines()
    assert table[0].split() == list(cli.COLUMNS)
    assert table[1].index("mwms") == table[2].index("pss") == table[0].index("shape")
    assert "…" in table[2]


# -- a job judged by what it has ---------------------------------------------------------
def test_a_job_without_an_exporter_is_not_judged_on_exports():
    """The Getting-started train.py has no exporter: no export, and no violation for it;
    the report says export was not judged, and why."""
    from trainexec.testing.chaos import ChaosReport, not_judged

    evidence = good_evidence(exports=(), export_name=None)
    assert names(evidence) == []
    assert not_judged(evidence) == {
        "export": "the job has no exporter (run_schedule's export_name names one)"}
    # The same run, its exporter named: the missing export is a violation.
    assert names(good_evidence(exports=())) == ["export"]
    report = ChaosReport(SCHEDULE, evidence, (), 60.0, 70.0, {}, ())
    assert "export" not in report.judged and "final-evaluated" in report.judged
    summary = report.summary()
    assert "not judged: export: the job has no exporter" in summary
    assert "violated: none" in summary


def test_a_job_without_an_evaluator_is_not_judged_on_evaluation():
    schedule = dataclasses.replace(SCHEDULE, evaluator=False)
    evidence = good_evidence(schedule=schedule, evaluated=(), exports=())
    assert names(evidence) == []
    assert set(not_judged_of(evidence)) == {"final-evaluated", "half-checkpoint", "export"}


def test_restarted_and_recovery_need_faults_that_call_for_them():
    freeze = Schedule.explicit("mwms", ["freeze worker:0 at 5s for 2s"], seed=1)
    evidence = good_evidence(schedule=freeze, applied=(
        AppliedFault(freeze.faults[0], T0 + 25.0, T0 + 27.0),))
    assert list(not_judged_of(evidence)) == ["restarted"]
    assert set(not_judged_of(good_evidence(applied=()))) == {"restarted", "recovery"}


def not_judged_of(evidence):
    from trainexec.testing.chaos import not_judged

    return not_judged(evidence)


# -- schedules drawn for a job's training length ------------------------------------------
@pytest.mark.parametrize("training_secs", [1.5, 3.0, 40.0])
def test_schedules_scale_to_the_jobs_training(training_secs):
    for seed in range(1, 60):
        schedule = Schedule.generate(seed, training_secs=training_secs)
        assert schedule.faults
        assert all(0 < f.at_secs <= 0.9 * training_secs + 0.05 for f in schedule.faults), \
            schedule.describe()
        assert all(f.duration_secs <= 1.2 * training_secs + 0.05 for f in schedule.faults)
    # The same seed draws the same kinds and tasks, at times in proportion.
    plain, scaled = Schedule.generate(5), Schedule.generate(5, training_secs=5.0)
    assert [(f.kind, f.task) for f in plain.faults] == [(f.kind, f.task) for f in scaled.faults]


def test_training_secs_must_be_positive():
    with pytest.raises(ValueError, match="training_secs=0"):
        Schedule.generate(1, training_secs=0)


@pytest.mark.parametrize("mode", MODES)
def test_every_job_mode_runs_a_packaged_job_with_its_paths(mode):
    import importlib.util

    from trainexec.testing.chaos.runner import demo_job
    from trainexec.testing.chaos.storages import JobPaths

    spec = demo_job(Schedule.explicit(mode, []), JobPaths("/m", "/r.json"), 777)
    module = spec.command[spec.command.index("-m") + 1]
    assert module.startswith("trainexec.examples.")
    assert importlib.util.find_spec(module) is not None
    text = " ".join(spec.command)
    assert "--model-dir /m --max-steps 777" in text and text.endswith("--result-file /r.json")
    assert ("--strategy mwms" in text) == (mode == "estimator-mwms")


@pytest.mark.parametrize("phase, exits, disk_full, resubmitted", [
    ("Failed", [("demo-chief-0", 74)], True, True),       # the job stopped: resubmitted
    ("Succeeded", [("demo-evaluator-0", 74)], True, True),  # seed 75: its evaluator did
    ("Succeeded", [("demo-worker-0", 143)], True, False),   # nothing a full disk stopped
    ("Failed", [("demo-chief-0", 1)], False, False),        # no full disk: not resubmitted
])
def test_a_job_or_a_pod_a_full_disk_stopped_is_submitted_again(phase, exits, disk_full,
                                                                resubmitted):
    from trainexec.testing.chaos.runner import _FaultPlayer, _stopped_by_full_disk
    from trainexec.testing.kubelet import Event, JobOutcome

    schedule = Schedule.explicit("mwms", ["disk-full storage:0 at 3s for 8s"],
                                 storage="nfs")
    player = _FaultPlayer(schedule, storage=None, clock=lambda: 0.0)
    player.applied = [AppliedFault(schedule.faults[0], 3.0, 11.0, applied=disk_full)]
    outcome = JobOutcome(phase, "", 0.0, 20.0, tuple(
        Event(15.0, pod, "exited", f"exit code {code}", code) for pod, code in exits))
    assert _stopped_by_full_disk(outcome, player) is resubmitted


def test_an_evaluator_stopped_after_the_job_ended_is_not_held_to_the_final_evaluation():
    from trainexec.testing.chaos import not_judged

    # Storage rerun seed 75: the evaluator was killed 0.5 s after the chief succeeded; a
    # finished TFJob restarts no pod, so the final checkpoint could not be evaluated.
    evaluator_kill = Fault("kill", "evaluator", 0, 40.0)
    late = AppliedFault(evaluator_kill, T0 + 60.5, T0 + 60.5)
    unfinished = good_evidence(applied=good_evidence().applied + (late,),
                               evaluated=good_evidence().evaluated[:1], exports=())
    assert "final-evaluated" in not_judged(unfinished)
    assert "after the job had ended" in not_judged(unfinished)["export"]
    assert not {"final-evaluated", "export"} & set(names(unfinished))
    # Storage seed 171: preempted 1.1 s before the chief succeeded, its restart (due 1 s
    # after its exit) came after the end and was not made: not held to them either.
    sigterm = Fault("sigterm", "evaluator", 0, 35.0)
    waiting = good_evidence(
        applied=good_evidence().applied + (AppliedFault(sigterm, T0 + 58.9, T0 + 58.9),),
        pod_events=good_evidence().pod_events + (
            PodEvent("demo-evaluator-0", T0 + 59.0, "restarting"),),
        evaluated=good_evidence().evaluated[:1], exports=())
    assert "its restart, due after the end, was not made" in not_judged(waiting)["export"]
    assert not {"final-evaluated", "export"} & set(names(waiting))
    # Restarted (a start after its restarting), it is held to both.
    restarted = dataclasses.replace(waiting, pod_events=waiting.pod_events + (
        PodEvent("demo-evaluator-0", T0 + 59.9, "started"),))
    assert {"final-evaluated", "export"} <= set(names(restarted))
    # Killed before the job ended, it is restarted and held to both.
    early = dataclasses.replace(unfinished, applied=good_evidence().applied + (
        AppliedFault(evaluator_kill, T0 + 59.0, T0 + 59.0),))
    assert {"final-evaluated", "export"} <= set(names(early))


def test_a_fault_the_bed_fails_to_apply_is_reported_with_the_beds_error():
    # Chaos seed 135 (NFS): a storage fault's plan file could not be written; its thread
    # died and the report said "every pod had ended before its time".
    from trainexec.testing.chaos.runner import _FaultPlayer

    class _Broken:
        lingers_secs: dict = {}

        def apply(self, fault):
            raise FileNotFoundError(2, "No such file or directory", "plan.json.tmp")

    schedule = Schedule.explicit("mwms", ["storage-slow storage:0 at 0s for 2s with 1s"],
                                 storage="nfs")
    player = _FaultPlayer(schedule, storage=_Broken(), clock=lambda: 0.0)
    player.start(run=None, began=0.0)
    [applied] = player.finish()
    assert not applied.applied
    assert applied.detail == ("not applied: the bed failed: FileNotFoundError: [Errno 2] No "
                              "such file or directory: 'plan.json.tmp'")


def test_a_storage_fault_is_recorded_with_its_storages_settling_time():
    from trainexec.testing.chaos.runner import _FaultPlayer

    class _Bucket:
        lingers_secs = {"storage-outage": 35.0}
        played: list = []

        def apply(self, fault):
            self.played.append(fault.kind)

    schedule = Schedule.explicit("mwms", ["storage-outage storage:0 at 0s for 2s",
                                          "storage-errors storage:0 at 0s for 1s"],
                                 storage="gs")
    player = _FaultPlayer(schedule, storage=_Bucket(), clock=lambda: 0.0)
    player.start(run=None, began=0.0)
    recorded = {a.fault.kind: a for a in player.finish()}
    assert sorted(_Bucket.played) == ["storage-errors", "storage-outage"]
    assert recorded["storage-outage"].over == 2.0 + 35.0
    assert recorded["storage-errors"].over == 1.0


def test_the_run_waits_for_the_pods_until_the_last_fault_is_over_lingering_counted():
    # After the job ends, the runner waits for the pods until the late-exit bound can
    # pass: it counts a gs:// outage's lingering, or a pod ending late but inside the
    # bound would be judged as left running.
    from trainexec.testing.chaos.runner import _FaultPlayer

    class _Bucket:
        lingers_secs = {"storage-outage": 35.0}

    schedule = Schedule.explicit("mwms", ["storage-outage storage:0 at 5s for 10s",
                                          "kill worker:0 at 20s"], storage="gs")
    player = _FaultPlayer(schedule, storage=_Bucket(), clock=lambda: 100.0)
    assert player.left_secs() == 0.0  # training has not begun
    player.began = 90.0
    assert player.left_secs() == 90.0 + 5.0 + 10.0 + 35.0 - 100.0
