"""trainexec/evaluation/evaluate_on_save.py: evaluation after a training task's own saves,
shared by the Estimator (local, master) and the KerasTrainer (local), on a real
checkpoint directory with fake metrics."""

import logging
import os

import pytest

from fakes import (DirectoryTarget, FakeClock, FinalOnlyExporter, RecordingExporter,
                   point_state_file_at, write_checkpoint)
from trainexec.evaluation.evaluate_on_save import EvaluateOnSave, OnSaveWording
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.specs import EvalSpec

pytestmark = pytest.mark.tf_line

WORDING = OnSaveWording(stopped_before_eval="before_eval stops",
                        stopped_after_eval="after_eval stops",
                        throttled="throttled step %s (%ss)",
                        not_evaluated="no {path}: {status}",
                        evaluated="evaluated %s (step %s): %s")


class Answers(ContinuousEvalListener):
    """Answers before_eval / after_eval from lists (then True), counting the calls."""

    def __init__(self, before=(), after=()):
        self.before, self.after = list(before), list(after)
        self.befores = self.afters = 0

    def before_eval(self):
        self.befores += 1
        return self.before.pop(0) if self.before else True

    def after_eval(self, eval_result):
        self.afters += 1
        return self.after.pop(0) if self.after else True


def on_save_for(tmp_path, throttle_secs=0, exporters=(), listener=None, clock=None,
                max_steps=30, **kw):
    target = DirectoryTarget(str(tmp_path))
    spec = EvalSpec(lambda: None, exporters=list(exporters), throttle_secs=throttle_secs)
    return target, EvaluateOnSave(target, spec, max_steps, listener or Answers(),
                                  clock or FakeClock(), WORDING, **kw)


def save(tmp_path, step):
    prefix = write_checkpoint(str(tmp_path), step)
    point_state_file_at(str(tmp_path), prefix)
    return prefix


def test_evaluates_each_save_then_the_last_as_the_final_one(tmp_path, caplog):
    exporter = RecordingExporter()
    target, on_save = on_save_for(tmp_path, exporters=[exporter])
    with caplog.at_level(logging.INFO, logger="trainexec.evaluation.evaluate_on_save"):
        for step in (10, 20):
            assert on_save.after_save(step, save(tmp_path, step)) is True
        assert on_save.after_save(30, save(tmp_path, 30)) is True  # left to finish
        on_save.finish(30, os.path.join(str(tmp_path), "model.ckpt-30"))
    assert [os.path.basename(p) for p in target.evaluated] == [
        "model.ckpt-10", "model.ckpt-20", "model.ckpt-30"]
    assert [(c["step"], c["final"]) for c in exporter.calls] == [
        (10, False), (20, False), (30, True)]
    assert on_save.eval_result.global_step == 30
    assert on_save.export_results == [os.path.join(str(tmp_path), "export", "recorder")]
    assert f"evaluated {tmp_path}/model.ckpt-10 (step 10): global_step = 10, " \
           "loss = 0.0909091" in caplog.text


def test_without_a_path_it_evaluates_the_latest_complete_checkpoint(tmp_path):
    target, on_save = on_save_for(tmp_path)
    save(tmp_path, 10)
    assert on_save.after_save(10) is True
    assert [os.path.basename(p) for p in target.evaluated] == ["model.ckpt-10"]


def test_a_save_with_nothing_to_evaluate_fails_in_the_trainers_words(tmp_path):
    _, on_save = on_save_for(tmp_path)
    with pytest.raises(RuntimeError,
                       match="^no the latest checkpoint after step 10: missing checkpoint$"):
        on_save.after_save(10)


def test_throttle_secs_skips_saves_but_not_the_end(tmp_path, caplog):
    clock = FakeClock()
    target, on_save = on_save_for(tmp_path, throttle_secs=60, clock=clock)
    with caplog.at_level(logging.INFO, logger="trainexec.evaluation.evaluate_on_save"):
        on_save.after_save(10, save(tmp_path, 10))
        clock.time += 30
        on_save.after_save(20, save(tmp_path, 20))
        on_save.finish(20, os.path.join(str(tmp_path), "model.ckpt-20"))
    assert [os.path.basename(p) for p in target.evaluated] == [
        "model.ckpt-10", "model.ckpt-20"]
    assert "throttled step 20 (60s)" in caplog.text


def test_the_last_save_evaluated_mid_training_gets_only_the_final_export_it_declined(
        tmp_path):
    latest, final = RecordingExporter("latest"), FinalOnlyExporter("final")
    target, on_save = on_save_for(tmp_path, exporters=[latest, final], max_steps=None)
    path = save(tmp_path, 20)
    on_save.after_save(20, path)  # no max_steps: nobody knows it is the last
    on_save.finish(20, path)
    assert len(target.evaluated) == 1
    assert [(c["step"], c["final"]) for c in latest.calls] == [(20, False)]
    assert [(c["step"], c["final"]) for c in final.calls] == [(20, False), (20, True)]
    base = os.path.join(str(tmp_path), "export")
    assert on_save.export_results == [os.path.join(base, "latest"),
                                       os.path.join(base, "final")]


@pytest.mark.parametrize("listener, line, evaluated", [
    (Answers(before=[False]), "before_eval stops", []),
    (Answers(after=[False]), "after_eval stops", ["model.ckpt-10"]),
])
def test_a_listener_stops_training_after_a_save(tmp_path, caplog, listener, line, evaluated):
    target, on_save = on_save_for(tmp_path, listener=listener)
    with caplog.at_level(logging.INFO, logger="trainexec.evaluation.evaluate_on_save"):
        assert on_save.after_save(10, save(tmp_path, 10)) is False
    assert line in caplog.text
    assert [os.path.basename(p) for p in target.evaluated] == evaluated


def test_a_listener_that_declines_the_final_evaluation_gets_none(tmp_path):
    listener = Answers(before=[True, False])
    target, on_save = on_save_for(tmp_path, listener=listener)
    on_save.after_save(10, save(tmp_path, 10))
    on_save.finish(20, save(tmp_path, 20))
    assert [os.path.basename(p) for p in target.evaluated] == ["model.ckpt-10"]
    assert (listener.befores, listener.afters) == (2, 1)
    assert on_save.eval_result.global_step == 10


def test_nothing_evaluated_leaves_no_result(tmp_path):
    _, on_save = on_save_for(tmp_path, listener=Answers(before=[False]))
    on_save.finish(10, save(tmp_path, 10))
    assert (on_save.eval_result, on_save.export_results) == (None, None)


def test_each_evaluation_runs_where_the_trainer_says(tmp_path):
    ran = []

    def run_evaluation(evaluate):
        ran.append("elsewhere")
        return evaluate()

    _, on_save = on_save_for(tmp_path, run_evaluation=run_evaluation)
    on_save.after_save(10, save(tmp_path, 10))
    on_save.finish(20, save(tmp_path, 20))
    assert ran == ["elsewhere", "elsewhere"]
