"""trainexec/keras/hooks.py: a KerasTrainer task's hooks, called one at a time as the role
sequence (`trainexec.tasks`) calls them, on a tiny real Keras model: the session announces
the task's restart group to the launcher; `train` hands each save to the evaluation after
saves and reports how training ended; progress goes to TensorBoard and the launcher's
status record; `evaluation` is a KerasTarget on a model of its own with its summaries under
`model_dir/eval_<name>`; `run_evaluation` runs off the training strategy's thread. The
whole role sequence: tests/test_tasks_roles.py and tests/test_keras_trainer.py."""

import logging
import os
import sys
import threading

import pytest
import tensorflow as tf

from event_files import scalars
from fakes import FakeClock
from trainexec.cluster.config import ClusterConfig
from trainexec.contract.restart_announcements import LAUNCH_DIR_ENV, read_rules
from trainexec.contract.task_status import TRAINING, read_statuses
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.evaluation.one_pass import EvalResult, EvalStatus
from trainexec.keras.evaluate.target import KerasTarget
from trainexec.keras.hooks import KerasHooks
from trainexec.keras.trainer import KerasTrainer
from trainexec.records.checkpoints import checkpoint_step
from trainexec.specs import EvalSpec, TrainSpec
from trainexec.trainer import JobSettings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "keras_programs"))
import keras_toy  # noqa: E402

pytestmark = [pytest.mark.tf_line, pytest.mark.keras]

MWMS_CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]}


def hooks_for(model_dir, max_steps=20, cluster=None, build=keras_toy.build_dense,
              **options):
    """The hooks `KerasTrainer.task_hooks` makes for the task (a local run by default)
    and its role plan, as the executor asks for them."""
    options.setdefault("save_checkpoints_steps", 10)
    trainer = KerasTrainer(build, str(model_dir), **options)
    cluster = cluster or ClusterConfig()
    settings = JobSettings(
        train_spec=TrainSpec(keras_toy.train_input_fn, max_steps=max_steps),
        eval_spec=EvalSpec(keras_toy.eval_dataset, steps=None, name="holdout"),
        cluster=cluster, clock=FakeClock(), poll_secs=1.0, idle_timeout_secs=None,
        listener=ContinuousEvalListener())
    plan = trainer.plan_role(cluster)
    return trainer.task_hooks(plan, settings), plan


class SavesSeen:
    """The evaluation after saves, as `train` calls it: records each save; asks to stop
    training after the save at `stop_at`."""

    def __init__(self, stop_at=None):
        self.stop_at, self.saves = stop_at, []

    def after_save(self, step, path):
        self.saves.append((step, path))
        return step != self.stop_at


def test_the_session_tells_the_launcher_the_tasks_restart_group_before_the_role_runs(
        tmp_path, monkeypatch):
    monkeypatch.setenv(LAUNCH_DIR_ENV, str(tmp_path / "launch"))
    worker = ClusterConfig(cluster=MWMS_CLUSTER, task_type="worker", task_index=1)
    hooks, _ = hooks_for(tmp_path / "model", cluster=worker)
    with hooks.session():
        [rule] = read_rules(str(tmp_path / "launch"), ["worker:1"]).values()
        # MultiWorkerMirroredStrategy: every training task restarts together.
        assert rule.group == ("chief:0", "worker:0", "worker:1")
        assert rule.strategy == "multi_worker_mirrored" and rule.ends_by_itself


def test_train_hands_each_save_to_on_save_and_stops_when_it_asks(tmp_path, caplog):
    hooks, plan = hooks_for(tmp_path, max_steps=40, summaries=False)
    seen = SavesSeen(stop_at=20)
    with caplog.at_level(logging.INFO, logger="trainexec"):
        trained = hooks.train(plan, seen, record_finished=lambda: None)
    assert [(step, checkpoint_step(path)) for step, path in seen.saves] == [(10, 10), (20, 20)]
    assert all(os.path.exists(path + ".index") for _, path in seen.saves)
    assert trained.step == 20 and trained.final_step == 20 and trained.stopped_early
    assert trained.checkpoint == seen.saves[-1][1]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["Training stopped after the save at step 20, as requested"]
    assert "Training finished at step 20" in caplog.messages


def test_without_progress_lines_summaries_and_status_still_come_every_100_steps(
        tmp_path, monkeypatch, caplog):
    launch = tmp_path / "launch"
    monkeypatch.setenv(LAUNCH_DIR_ENV, str(launch))
    model_dir = tmp_path / "model"
    hooks, plan = hooks_for(model_dir, max_steps=150, save_checkpoints_steps=150,
                            log_step_count_steps=None)
    with caplog.at_level(logging.INFO, logger="trainexec"):
        trained = hooks.train(plan, None, record_finished=lambda: None)
    assert trained.final_step == 150 and not trained.stopped_early
    training = scalars(model_dir)  # at every 100 steps, and where training ends
    assert sorted(training["loss"]) == sorted(training["mae"]) == [100, 150]
    assert "steps_per_sec" not in training  # timed on the job's clock, a fake one here
    assert not any(m.startswith("step ") for m in caplog.messages)  # no progress lines
    record = read_statuses(str(launch), ["local"])["local"]
    assert record["kind"] == TRAINING and (record["step"], record["max_steps"]) == (150, 150)
    assert record["model_dir"] == str(model_dir)


def test_evaluation_is_a_target_on_a_model_of_its_own_with_summaries_under_its_name(
        tmp_path):
    built = []

    def build():
        built.append(keras_toy.build_dense())
        return built[-1]
    hooks, plan = hooks_for(tmp_path, build=build)
    hooks.train(plan, None, record_finished=lambda: None)
    with hooks.evaluation() as evaluation:
        assert len(built) == 2 and evaluation.target.model is built[-1]  # not training's
        assert isinstance(evaluation.target, KerasTarget)
        latest = evaluation.target.latest_checkpoint()
        metrics = evaluation.target.evaluate(latest)
        [summaries] = evaluation.listeners
        summaries.after_eval(EvalResult(EvalStatus.EVALUATED, metrics, latest))
    # The checkpoint's metrics on the EvalSpec's data, as a fresh model restored gives.
    assert metrics["global_step"] == 20
    assert {k: metrics[k] for k in ("loss", "mae")} == pytest.approx(
        keras_toy.evaluate_checkpoint("dense", latest), rel=1e-5)
    written = scalars(tmp_path / "eval_holdout")
    assert set(written) == {"loss", "mae"}
    for name in written:
        assert written[name] == {20: pytest.approx(metrics[name], rel=1e-6)}
    quiet, _ = hooks_for(tmp_path, summaries=False)
    with quiet.evaluation() as evaluation:
        assert evaluation.listeners == ()


def test_run_evaluation_runs_outside_the_training_strategy_and_reraises_its_error():
    with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
        assert tf.distribute.has_strategy()
        assert KerasHooks.run_evaluation(tf.distribute.has_strategy) is False
        caller = threading.current_thread()
        assert KerasHooks.run_evaluation(threading.current_thread) is not caller
        error = ValueError("the evaluation failed")

        def fail():
            raise error
        with pytest.raises(ValueError) as caught:
            KerasHooks.run_evaluation(fail)
        assert caught.value is error
