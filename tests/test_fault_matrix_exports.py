"""Fault matrix of exports, evaluator records and the ps (issue 9): one row per fault.

Each row asserts what the user sees, how soon it is noticed (a generous bound),
that nothing was lost (final metrics, exactly one final export) and that no
process it started survives. Real parts where practical: real Keras
checkpoints (sidecar_programs/toy.py), a real Estimator (marked `estimator`).
The rows with real child processes (the second evaluator, the export writer and
the ps) are tests/cluster/test_export_faults.py; the runs on disk both use are
tests/finished_runs.py. After the rows, focused tests of the pieces the rows rely
on: the evaluator lease, the final-export record and the ps's decision.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import subprocess
import time

import pytest
import tensorflow as tf

from fakes import FakeClock, FakeServer, FinalOnlyExporter, RecordingExporter, StubEstimator, write_checkpoint
from finished_runs import finished_keras_run, finished_run, input_fn, loss_at
from processes import wait_until
from tf_configs import ps_cluster
from trainexec.cluster.config import ClusterConfig
from trainexec.records.completion import record_training_complete
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.executor import TrainingExecutor
from trainexec.keras.evaluate.exporters import (BEST_FILE, BestExporter, FinalExporter,
                                                LatestExporter)
from trainexec.specs import EvalSpec, TrainSpec

# timed: bounds real time (seconds): runs with the cluster tests, at normal priority
pytestmark = [pytest.mark.tf_line, pytest.mark.timed]


# -- evaluators of Keras checkpoints of known quality (finished_runs.finished_keras_run) ------

def sidecar(directory, data_seed=0, **kwargs):
    from sidecar_programs import toy
    from trainexec.keras.evaluate.sidecar import SidecarEvaluator

    kwargs.setdefault("verbose", 0)
    kwargs.setdefault("clock", FakeClock(0.0))
    return SidecarEvaluator(toy.build_model(), toy.dataset(seed=data_seed), str(directory),
                            **kwargs)


class CrashAfterFinal(ContinuousEvalListener):
    """The process dies right after the evaluation whose export was final
    (`exported_final()` says when)."""

    def __init__(self, exported_final):
        self._exported_final = exported_final

    def after_eval(self, eval_result):
        if self._exported_final():
            raise KeyboardInterrupt("killed after the final export")
        return True


def final_calls(recorder):
    return [(c["step"], os.path.basename(c["checkpoint_path"])) for c in recorder.calls
            if c["final"]]


# == 1. The final export happens exactly once per run, across evaluator restarts ==========

@pytest.mark.keras
def test_sidecar_killed_after_the_final_export_does_not_export_again(tmp_path):
    finished_keras_run(tmp_path, 0.5, 0.9)
    recorder = RecordingExporter("recorder")
    with pytest.raises(KeyboardInterrupt):
        sidecar(tmp_path, exporters=[FinalExporter(), recorder],
                listeners=[CrashAfterFinal(lambda: final_calls(recorder))]).start()
    assert final_calls(recorder) == [(16, "ckpt-2.weights.h5")]
    clock = FakeClock(0.0)
    restarted = sidecar(tmp_path, clock=clock, exporters=[FinalExporter(), recorder])
    metrics = restarted.start()
    assert final_calls(recorder) == [(16, "ckpt-2.weights.h5")]  # not again
    assert os.listdir(tmp_path / "export" / "final") == ["16"]
    assert metrics["global_step"] == 16  # nothing lost
    assert metrics["loss"] == pytest.approx(loss_at(0.9), rel=1e-5)
    assert clock.sleeps == []  # stopped at once


@pytest.mark.estimator
def test_estimator_evaluator_restarted_after_the_final_export_stops_at_once(
        tmp_path, monkeypatch):
    from trainexec.examples import estimator_job

    model_dir = str(tmp_path / "model")
    train_spec, eval_spec = estimator_job.build_specs(40, throttle_secs=0)
    estimator_job.make_estimator(model_dir, 20).train(train_spec.input_fn, max_steps=40)
    record_training_complete(model_dir, tf.train.latest_checkpoint(model_dir), 40, 40)
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["127.0.0.1:1"]}, "task": {"type": "evaluator", "index": 0}}))

    def evaluator(clock, listener=None):
        return TrainingExecutor(estimator_job.make_estimator(model_dir, 20), train_spec,
                                eval_spec, continuous_eval_listener=listener, clock=clock)
    final_dir = os.path.join(model_dir, "export", "final")
    with pytest.raises(KeyboardInterrupt):  # (its fake clock skips the record's grace)
        evaluator(FakeClock(), CrashAfterFinal(lambda: os.path.isdir(final_dir))).run()
    finals = os.listdir(final_dir)
    assert len(finals) == 1
    clock, started = FakeClock(), time.monotonic()
    metrics, exports = evaluator(clock).run()  # the restarted evaluator
    assert clock.sleeps == [], "it waited (for the completion record's grace)"
    assert time.monotonic() - started < 10
    assert os.listdir(os.path.join(model_dir, "export", "final")) == finals  # exactly one
    assert metrics["global_step"] == 40 and metrics["accuracy"] > 0.8
    assert [os.path.basename(e.decode()) for e in exports] == finals


def estimator_evaluator(model_dir, exporters, max_steps, clock, listener=None, name=None):
    cluster = ClusterConfig(cluster={"chief": ["127.0.0.1:1"]}, task_type="evaluator",
                            task_index=0)
    return TrainingExecutor(
        StubEstimator(model_dir, "evaluator"), TrainSpec(input_fn, max_steps=max_steps),
        EvalSpec(input_fn, throttle_secs=0, start_delay_secs=0, exporters=exporters,
                 name=name),
        continuous_eval_listener=listener, cluster=cluster, clock=clock)


@pytest.mark.parametrize("max_steps", [20, None])
def test_estimator_evaluator_exports_the_final_model_once_across_a_restart(
        tmp_path, max_steps):
    finished_run(tmp_path, max_steps=max_steps)
    recorder = FinalOnlyExporter("recorder")
    # Killed after the final export; without max_steps that export is made when
    # the loop stops, after the last listener call: there the run just ends.
    with contextlib.suppress(KeyboardInterrupt):
        estimator_evaluator(tmp_path, [recorder], max_steps, FakeClock(),
                            CrashAfterFinal(lambda: final_calls(recorder))).run()
    assert final_calls(recorder) == [(20, "model.ckpt-20")]
    clock = FakeClock()
    metrics, exports = estimator_evaluator(tmp_path, [recorder], max_steps, clock).run()
    assert final_calls(recorder) == [(20, "model.ckpt-20")]
    assert metrics == {"global_step": 20, "loss": 1 / 21}
    assert exports == [str(tmp_path / "export" / "recorder")]
    if max_steps is not None:  # the run cannot go on: done at once
        assert clock.sleeps == []
    else:  # the completion record may be an earlier run's: its grace is kept
        assert 30 <= sum(clock.sleeps) <= 32


def test_final_export_interrupted_between_two_exporters_is_finished_not_repeated(tmp_path):
    finished_run(tmp_path)
    first, second = RecordingExporter("first"), RecordingExporter("second")

    class Killed(Exception):
        pass

    def die(**kwargs):
        raise Killed()
    second_export, second.export = second.export, die
    with pytest.raises(Killed):
        estimator_evaluator(tmp_path, [first, second], 20, FakeClock()).run()
    second.export = second_export
    metrics, _ = estimator_evaluator(tmp_path, [first, second], 20, FakeClock()).run()
    assert final_calls(first) == [(20, "model.ckpt-20")]
    assert final_calls(second) == [(20, "model.ckpt-20")]
    assert metrics["global_step"] == 20


# == 2. Evaluators with their own state_dir have their own exports =========================

@pytest.mark.keras
def test_evaluators_of_two_data_sets_keep_their_own_best_exports(tmp_path):
    checkpoints = tmp_path / "ckpts"
    finished_keras_run(checkpoints, 0.9)
    exporters = lambda: [BestExporter(metric="loss"), FinalExporter()]  # noqa: E731
    results = {}
    for name, seed in (("easy", 0), ("hard", 7)):  # the second data set scores worse
        results[name] = sidecar(checkpoints, seed, state_dir=tmp_path / name,
                                exporters=exporters()).start()
    assert results["hard"]["loss"] != results["easy"]["loss"]
    for name in ("easy", "hard"):
        best = json.loads((tmp_path / name / "export" / "best" / BEST_FILE).read_text())
        assert best["value"] == pytest.approx(results[name]["loss"])
        assert sorted(os.listdir(tmp_path / name / "export" / "best")) == ["8", BEST_FILE]
        assert os.listdir(tmp_path / name / "export" / "final") == ["8"]
    assert not (checkpoints / "export").exists()
    # One evaluator, default state_dir: the layout stays <checkpoint_dir>/export/.
    sidecar(checkpoints, exporters=exporters()).start()
    assert sorted(os.listdir(checkpoints / "export")) == ["best", "final"]


# == 3. A second evaluator on the same state directory is refused =========================


@pytest.mark.keras
def test_evaluators_of_other_state_dirs_run_side_by_side(tmp_path):
    from trainexec.evaluation.lease import EvaluatorAlreadyRunning, EvaluatorLease

    checkpoints = tmp_path / "ckpts"
    finished_keras_run(checkpoints, 0.5)
    with EvaluatorLease(str(checkpoints), "an evaluator started by hand"):
        # another state_dir: fine
        assert sidecar(checkpoints, state_dir=tmp_path / "other").start() is not None
        with pytest.raises(EvaluatorAlreadyRunning, match="an evaluator started by hand, "
                           f"pid {os.getpid()} on host"):
            sidecar(checkpoints).start()
    assert sidecar(checkpoints).start()["global_step"] == 8  # once it is released


def test_estimator_evaluators_of_the_same_evaluation_name_are_refused(tmp_path):
    from trainexec.evaluation.final_export import estimator_state_dir
    from trainexec.evaluation.lease import EvaluatorAlreadyRunning, EvaluatorLease

    finished_run(tmp_path)
    with EvaluatorLease(estimator_state_dir(str(tmp_path), None), "the first evaluator"):
        with pytest.raises(EvaluatorAlreadyRunning, match="the first evaluator, pid"):
            estimator_evaluator(tmp_path, [], 20, FakeClock()).run()
        metrics, _ = estimator_evaluator(tmp_path, [], 20, FakeClock(), name="other").run()
    assert metrics["global_step"] == 20


# == 4. One exporter-name check for every caller ==========================================

@pytest.mark.keras
@pytest.mark.parametrize("name", ["..", ".", "a\\b", "a\x00b"])
def test_exporter_named_to_escape_its_directory_is_refused_everywhere(tmp_path, name):
    from trainexec.keras.evaluate.sidecar import SidecarEvaluator
    from sidecar_programs import toy

    finished_keras_run(tmp_path, 0.5)
    before = sorted(os.listdir(tmp_path))
    messages = []
    for make in (lambda: LatestExporter(name=name),
                 lambda: SidecarEvaluator(toy.build_model(), toy.dataset(), str(tmp_path),
                                          exporters=[RecordingExporter(name)]),
                 lambda: EvalSpec(input_fn, exporters=[RecordingExporter(name)])):
        with pytest.raises(ValueError) as info:
            make()
        messages.append(str(info.value))
    assert len(set(messages)) == 1, messages  # the same check, the same words
    assert f"exporter `name` ({name!r}) must be a single directory name" in messages[0]
    assert sorted(os.listdir(tmp_path)) == before  # nothing written beside the checkpoints


# == 5. The ps stops once the completion record shows training is over ====================


def run_ps(model_dir, clock, max_steps=20, poll_secs=1.0):
    cluster = ClusterConfig(cluster=ps_cluster([1, 2, 3]), task_type="ps", task_index=0)
    return TrainingExecutor(StubEstimator(model_dir, "ps"), TrainSpec(input_fn, max_steps),
                            EvalSpec(input_fn), cluster=cluster, clock=clock,
                            server_factory=FakeServer, poll_secs=poll_secs).run()


class StillServing(Exception):
    pass


def test_ps_logs_what_it_waits_for_at_start_and_every_minute(tmp_path, caplog):
    clock = FakeClock()

    def five_minutes_pass(_clock):
        if clock.time - 1000 >= 300:
            raise StillServing()
    clock.on_sleep = five_minutes_pass
    with caplog.at_level(logging.INFO, logger="trainexec.tasks.serving"):
        with pytest.raises(StillServing):
            run_ps(tmp_path, clock)
    waiting = [r for r in caplog.records if "waiting for chief:0, worker:0" in r.getMessage()]
    assert len(waiting) >= 5  # at start, then at least once a minute
    assert waiting[0].getMessage().startswith("ps:0 serving: waiting for")


@pytest.mark.parametrize("latest_step,max_steps", [(10, 20), (20, None)])
def test_ps_is_not_stopped_by_an_earlier_runs_completion_record(tmp_path, latest_step,
                                                                 max_steps):
    # A record already there when the ps starts, with training still to do
    # (max_steps not reached), or that cannot be told from this run's (no
    # max_steps): this run's chief clears it when it starts.
    finished_run(tmp_path, step=latest_step, max_steps=max_steps)
    age = time.time() - 3600
    path = tmp_path / "trainexec" / "training_complete.json"
    os.utime(path, (age, age))
    clock = FakeClock()

    def a_minute_passes(_clock):
        if clock.time - 1000 >= 60:
            raise StillServing()
    clock.on_sleep = a_minute_passes
    with pytest.raises(StillServing):
        run_ps(tmp_path, clock, max_steps=max_steps)


# == 6. Small ones ==========================================================================

# -- the pieces: the evaluator lease -------------------------------------------------------

def test_lease_is_exclusive_and_released(tmp_path):
    from trainexec.evaluation.lease import LEASE_FILE, EvaluatorAlreadyRunning, EvaluatorLease

    with EvaluatorLease(str(tmp_path), "first") as lease:
        held = json.loads((tmp_path / LEASE_FILE).read_text())
        assert held["what"] == "first" and held["owner"]["pid"] == os.getpid()
        with pytest.raises(EvaluatorAlreadyRunning, match=r"already running on .*: first, "
                           r"pid \d+ on host .*, started \d{4}-.*held in this same process"):
            EvaluatorLease(str(tmp_path), "second").acquire()
        lease.check()
    assert not (tmp_path / LEASE_FILE).exists()
    EvaluatorLease(str(tmp_path), "second").acquire().release()


def write_foreign_lease(directory, owner, age_secs=0.0, renewals=0):
    from trainexec.evaluation.lease import LEASE_FILE

    path = os.path.join(directory, LEASE_FILE)
    with open(path, "w") as f:
        json.dump({"what": "elsewhere", "owner": dataclasses.asdict(owner),
                   "started_at": time.time() - age_secs, "token": "foreign",
                   "renewals": renewals}, f)
    if age_secs:
        then = time.time() - age_secs
        os.utime(path, (then, then))
    return path


def test_lease_of_a_dead_process_or_not_renewed_is_taken_over(tmp_path):
    from trainexec.evaluation.lease import EvaluatorLease
    from trainexec.records.liveness import Owner

    child = subprocess.Popen(["true"])
    child.wait()
    me = Owner.current()
    for owner, age in [(dataclasses.replace(me, pid=child.pid, started=None), 0),
                       (dataclasses.replace(me, host="another-host"), 300)]:
        write_foreign_lease(str(tmp_path), owner, age)
        waits = []
        with EvaluatorLease(str(tmp_path), "me", sleep=waits.append) as lease:
            assert json.loads(open(lease.path).read())["what"] == "me"
        assert waits == []  # provably gone: taken over at once


def test_lease_of_another_host_is_refused_once_it_renews_and_taken_when_silent(tmp_path):
    from trainexec.evaluation.lease import EvaluatorAlreadyRunning, EvaluatorLease
    from trainexec.records.liveness import Owner

    other = dataclasses.replace(Owner.current(), host="another-host")
    path = write_foreign_lease(str(tmp_path), other, age_secs=5)

    waits = []

    def holder_renews(secs):
        waits.append(secs)
        write_foreign_lease(str(tmp_path), other, renewals=len(waits))
    with pytest.raises(EvaluatorAlreadyRunning, match="elsewhere, pid .* on host another-host"
                       ".*it renewed its lease while this one waited"):
        EvaluatorLease(str(tmp_path), "me", sleep=holder_renews).acquire()
    assert len(waits) == 1  # refused at the first renewal it saw
    # Silent: taken over once `stale_secs` have passed without a renewal.
    write_foreign_lease(str(tmp_path), other, age_secs=1)
    waited = []
    lease = EvaluatorLease(str(tmp_path), "me", stale_secs=1.5,
                           sleep=lambda s: (waited.append(s), time.sleep(s)))
    lease.acquire()
    assert json.loads(open(path).read())["what"] == "me" and 0 < sum(waited) < 3
    lease.release()


def test_holder_whose_lease_was_taken_over_stops_before_the_next_evaluation(tmp_path):
    from trainexec.evaluation.lease import EvaluatorLease, EvaluatorLeaseLost, LeaseGuard
    from trainexec.records.liveness import Owner

    lease = EvaluatorLease(str(tmp_path), "me", renew_secs=0.05).acquire()
    try:
        write_foreign_lease(str(tmp_path), dataclasses.replace(Owner.current(),
                                                               host="another-host"))
        wait_until(lambda: lease.lost is not None, timeout=5, what="the renewal to notice")
        with pytest.raises(EvaluatorLeaseLost, match="lost its evaluator lease .* to "
                           "elsewhere, pid .* on host another-host"):
            LeaseGuard(lease).before_eval()
    finally:
        lease.release()
    assert os.path.exists(lease.path)  # the new holder's lease stays


# -- the pieces: the final-export record -------------------------------------------------

def test_final_export_record_tells_a_checkpoint_from_a_later_namesake(tmp_path):
    from trainexec.evaluation.final_export import FinalExportRecord, FinalOnce

    record = FinalExportRecord(str(tmp_path / "state"))
    recorder = FinalOnlyExporter("final")
    exporter = FinalOnce(recorder, record)
    prefix = write_checkpoint(str(tmp_path / "ckpts"), 20)

    def final_export():
        return exporter.export(estimator=None, export_path="/export/final",
                               checkpoint_path=prefix, eval_result={"global_step": 20},
                               is_the_final_export=True)
    assert final_export() == final_export() == "/export/final"
    assert len(recorder.calls) == 1
    # A run started afresh writes a checkpoint of the same name: a new one.
    write_checkpoint(str(tmp_path / "ckpts"), 20, value=1.0)
    later = time.time() + 5
    os.utime(prefix + ".index", (later, later))
    final_export()
    assert len(recorder.calls) == 2
