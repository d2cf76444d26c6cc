"""trainexec/tasks/hooks.py: what `TrainerHooks` gives a trainer that writes only what it
must (its defaults, and the errors for the steps it did not write), trainexec's own lines
for the evaluation after saves, and `same_model_dir`'s refusal. (Hooks driven through every
role: tests/test_tasks_roles.py; a directory written two ways: tests/test_trainer.py.)"""

import logging
import threading

import pytest

from trainexec.errors import ConfigError
from trainexec.tasks.hooks import (ON_SAVE_WORDING, Trained, TrainerHooks, TrainerWords,
                                   same_model_dir)
from trainexec.tasks.plan import TRAIN, RolePlan

pytestmark = pytest.mark.any_line

WORKER = RolePlan("worker:0", TRAIN, start_delay=True, waits_for_chief=True)


class BareHooks(TrainerHooks):
    """A trainer's hooks that write nothing but `model_dir`."""

    model_dir = "/tmp/run"


def test_the_defaults_let_a_task_start_at_once_and_evaluate_on_the_calling_thread():
    hooks = BareHooks()
    before = hooks.before_training(WORKER)
    assert before.start_delay_secs == 0.0
    with before.waiting_for_chief as waiting:  # enters and leaves without waiting
        assert waiting is None
    assert hooks.after_records(WORKER, Trained(step=20)) is None
    assert hooks.words == TrainerWords(on_save=ON_SAVE_WORDING, local_start=None)
    here = threading.get_ident()
    assert hooks.run_evaluation(lambda: ("evaluated on", threading.get_ident())) == (
        "evaluated on", here)


def test_the_default_session_does_not_swallow_a_failing_role():
    entered = []
    with pytest.raises(RuntimeError, match="out of memory"):
        with BareHooks().session():
            entered.append(True)
            raise RuntimeError("out of memory")
    assert entered == [True]


def test_a_step_the_trainer_did_not_write_names_the_trainer():
    hooks = BareHooks()
    with pytest.raises(ConfigError, match=r"^BareHooks starts no TensorFlow server$"):
        hooks.start_server()
    with pytest.raises(ConfigError, match=r"^BareHooks has no serving task$"):
        hooks.serving_job()
    with pytest.raises(NotImplementedError, match=r"^BareHooks\.train$"):
        hooks.train(WORKER, None, lambda: None)
    with pytest.raises(NotImplementedError, match=r"^BareHooks\.evaluation$"):
        hooks.evaluation()


def _logged(message, *args):
    """The line a logger writes for `message` % `args`."""
    return logging.LogRecord("t", logging.INFO, __file__, 1, message, args, None).getMessage()


def test_trainexecs_on_save_lines_take_the_arguments_they_are_given():
    """`EvaluateOnSave` logs `throttled` with (step, throttle_secs) and `evaluated` with
    (checkpoint, step, metrics text), and formats `not_evaluated` with path and status."""
    assert _logged(ON_SAVE_WORDING.throttled, 30, 600) == (
        "Not evaluating step 30: less than throttle_secs (600s) since the last evaluation")
    assert _logged(ON_SAVE_WORDING.evaluated, "/run/model.ckpt-30", 30, "loss = 0.5") == (
        "Evaluated /run/model.ckpt-30 (step 30): loss = 0.5")
    assert ON_SAVE_WORDING.not_evaluated.format(
        path="/run/model.ckpt-30", status="missing checkpoint") == (
        "Evaluating /run/model.ckpt-30 found missing checkpoint")
    assert ON_SAVE_WORDING.stopped_before_eval.endswith("before_eval asked to")
    assert ON_SAVE_WORDING.stopped_after_eval.endswith("after_eval asked to")


def test_two_model_dirs_are_refused_with_both_named_and_the_fix(tmp_path):
    run, other = tmp_path / "run", tmp_path / "other"
    with pytest.raises(ConfigError) as raised:
        same_model_dir(run, other, "the hooks")
    assert str(raised.value) == (
        f"model_dir: the trainer's is {str(run)!r} but the model_dir of the hooks is "
        f"{str(other)!r}; build "
        "them from one model_dir (every task reads and writes the run's checkpoints and "
        "records there)")


def test_a_local_directory_and_a_bucket_of_the_same_name_are_two(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for expected, found in [("run", "gs://bucket/run"), ("gs://bucket/run", "run")]:
        with pytest.raises(ConfigError, match=f"the trainer's is '{expected}' but"):
            same_model_dir(expected, found, "the hooks")


def test_a_relative_model_dir_is_the_same_as_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert same_model_dir("run", tmp_path / "run", "the evaluation target") == "run"
    assert same_model_dir(tmp_path / "run", "./run/", "the serving job") == str(
        tmp_path / "run")
