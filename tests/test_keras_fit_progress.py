"""trainexec/keras/fit/progress.py and summaries.py (with evaluation/summaries.py): when
progress is reported and what a report says (on a fake clock), the lines a real local
KerasTrainer run logs, and its TensorBoard summaries read back with TensorBoard's reader.
A MultiWorkerMirroredStrategy job's are in tests/cluster/test_keras_trainer_clusters.py."""

import json
import logging
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from event_files import scalars
from fakes import FakeClock
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.cluster.config import ClusterConfig
from trainexec.formatting import format_secs
from trainexec.keras.fit.progress import (Progress, ProgressTracker, describe_progress,
                                          progress_callback, scalar_logs)
from trainexec.evaluation.listeners import ListenerList
from trainexec.executor import TrainingExecutor
from trainexec.keras.trainer import KerasTrainer
from trainexec.specs import EvalSpec, TrainSpec
from trainexec.contract.task_status import TRAINING, read_statuses

PROGRAMS = os.path.join(os.path.dirname(__file__), "keras_programs")
sys.path.insert(0, PROGRAMS)
import keras_toy  # noqa: E402

pytestmark = pytest.mark.tf_line


def run_job(trainer, train_spec, eval_spec, cluster=None, *, listeners=(), **options):
    """A Keras job's role through the production path: `TrainingExecutor(...).run()`
    (what `train_and_evaluate` runs), the job's listeners as its one listener."""
    return TrainingExecutor(trainer, train_spec, eval_spec,
                            continuous_eval_listener=ListenerList(listeners),
                            cluster=cluster, **options).run()


def _drive(tracker, clock, start, steps, secs_per_step, epoch_steps):
    """Feeds the tracker as a fit call does: batches of epochs from `start`."""
    tracker.begin(start)
    step = start
    while step < start + steps:
        tracker.epoch_started(step)
        for batch in range(min(epoch_steps, start + steps - step)):
            clock.time += secs_per_step
            if tracker.due(tracker.estimate(batch)):
                tracker.report(step + batch + 1, {"loss": 0.5})
        step += min(epoch_steps, start + steps - step)


def test_reports_every_n_steps_and_at_max_steps_with_rate_and_time_left():
    clock, seen = FakeClock(), []
    tracker = ProgressTracker(max_steps=250, every_steps=100, sinks=[seen.append], clock=clock)
    _drive(tracker, clock, 0, 250, 0.02, epoch_steps=40)
    assert [p.step for p in seen] == [100, 200, 250]
    assert seen[0].steps_per_sec == pytest.approx(50.0)
    assert seen[0].secs_left == pytest.approx(3.0)  # 150 steps at 50/s
    assert seen[-1].secs_left == 0.0
    assert seen[1].metrics == {"loss": 0.5}


def test_a_resumed_run_reports_at_the_next_multiple_not_at_once():
    clock, seen = FakeClock(), []
    tracker = ProgressTracker(max_steps=300, every_steps=100, sinks=[seen.append], clock=clock)
    _drive(tracker, clock, 150, 150, 0.1, epoch_steps=50)
    assert [p.step for p in seen] == [200, 300]
    assert seen[0].steps_per_sec == pytest.approx(10.0)


def test_a_failing_sink_does_not_stop_the_others(caplog):
    seen = []

    def broken(progress):
        raise RuntimeError("disk full")

    tracker = ProgressTracker(10, 5, sinks=[broken, seen.append], clock=FakeClock())
    tracker.begin(0)
    with caplog.at_level(logging.WARNING):
        tracker.report(5, {})
    assert [p.step for p in seen] == [5] and "Progress report" in caplog.text


def test_describe_progress_and_times():
    line = describe_progress(Progress(200, 600, {"loss": 0.31214, "accuracy": 0.9}, 41.25,
                                      9.7))
    assert line == "step 200/600: loss = 0.3121, accuracy = 0.9 (41.2 steps/s, 10s left)"
    assert describe_progress(Progress(600, 600, {}, None, 0.0)) == \
        "step 600/600 (? steps/s, done)"
    assert [format_secs(s) for s in (None, 5, 185, 3725)] == ["?", "5s", "3m05s", "1h02m"]


def test_scalar_logs_keeps_numbers_only():
    logs = {"loss": tf.constant(0.25), "n": 3, "vector": np.zeros(2), "name": "x"}
    assert scalar_logs(logs) == {"loss": 0.25, "n": 3.0}


@pytest.mark.keras
def test_the_step_reported_is_the_batches_run_when_the_optimizer_lags_them():
    """Under ParameterServerStrategy a call's logs arrive while another worker still
    runs an earlier call: the optimizer counts 99 when batch 100 ends. The report
    says step 100, and the last one says max_steps (done)."""
    model = keras_toy.build_dense()
    reports = []
    tracker = ProgressTracker(max_steps=200, every_steps=100, sinks=[reports.append],
                              clock=FakeClock())
    callback = progress_callback(tracker)
    callback.set_model(model)
    callback.set_params({"steps": 100, "epochs": 2})
    iterations = model.optimizer.iterations
    iterations.assign(0)
    callback.on_train_begin()
    for epoch in range(2):
        callback.on_epoch_begin(epoch)
        for batch in range(9, 100, 10):  # 10 steps per call
            iterations.assign(epoch * 100 + batch)  # one call (10 steps) still running
            callback.on_train_batch_end(batch, {"loss": tf.constant(0.5)})
        callback.on_epoch_end(epoch)
    assert [(r.step, r.metrics) for r in reports] == [(100, {"loss": 0.5}),
                                                        (200, {"loss": 0.5})]
    assert describe_progress(reports[-1]).endswith("done)")


@pytest.mark.keras
def test_a_local_run_logs_progress_lines(tmp_path, caplog):
    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path), save_checkpoints_steps=40,
                           log_step_count_steps=25)
    with caplog.at_level(logging.INFO, logger="trainexec"):
        run_job(trainer, TrainSpec(keras_toy.train_input_fn, max_steps=110),
                      EvalSpec(keras_toy.eval_dataset, steps=None, start_delay_secs=0,
                               throttle_secs=0), ClusterConfig())
    lines = [r.getMessage() for r in caplog.records if r.name == "trainexec.keras.fit.progress"]
    assert [line.split(":")[0] for line in lines] == [
        "step 25/110", "step 50/110", "step 75/110", "step 100/110", "step 110/110"]
    for line in lines:
        assert "loss = " in line and "mae = " in line and " steps/s, " in line
    assert lines[0].endswith(" left)") and lines[-1].endswith(", done)")


@pytest.mark.keras
def test_log_step_count_steps_none_turns_progress_off(tmp_path, caplog):
    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path), save_checkpoints_steps=20,
                           log_step_count_steps=None)
    with caplog.at_level(logging.INFO, logger="trainexec"):
        run_job(trainer, TrainSpec(keras_toy.train_input_fn, max_steps=20),
                      EvalSpec(keras_toy.eval_dataset, steps=None, start_delay_secs=0,
                               throttle_secs=0), ClusterConfig())
    assert not [r for r in caplog.records if r.name == "trainexec.keras.fit.progress"]


# -- TensorBoard summaries ----------------------------------------------------------------
@pytest.mark.keras
def test_a_local_run_writes_training_and_evaluation_summaries_beside_a_users_tensorboard(
        tmp_path):
    model_dir, users = tmp_path / "model", tmp_path / "users-tensorboard"
    seen = StepsAndMetrics()
    trainer = KerasTrainer(keras_toy.build_dense, str(model_dir), save_checkpoints_steps=40,
                           log_step_count_steps=20,
                           callbacks=[tf.keras.callbacks.TensorBoard(str(users))])
    run_job(trainer, TrainSpec(keras_toy.train_input_fn, max_steps=100),
                  EvalSpec(keras_toy.eval_dataset, steps=None, start_delay_secs=0,
                           throttle_secs=0), ClusterConfig(), listeners=[seen])
    training = scalars(model_dir)
    assert sorted(training["loss"]) == [20, 40, 60, 80, 100]
    assert sorted(training["mae"]) == [20, 40, 60, 80, 100]
    assert all(rate > 0 for rate in training["steps_per_sec"].values())
    assert training["loss"][100] < training["loss"][20]  # it learned
    evaluation = scalars(model_dir / "eval")
    assert seen.metrics and set(evaluation) == {"loss", "mae"}
    for step, metrics in seen.metrics.items():  # what the evaluator logged, at its step
        for name in ("loss", "mae"):
            assert evaluation[name][step] == pytest.approx(metrics[name], rel=1e-6)
    assert sorted(evaluation["loss"]) == [40, 80, 100]
    # The user's own TensorBoard callback still wrote its epoch curves.
    assert scalars(users / "train")["epoch_loss"]


@pytest.mark.keras
def test_summaries_false_writes_none(tmp_path):
    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path), save_checkpoints_steps=20,
                           summaries=False)
    run_job(trainer, TrainSpec(keras_toy.train_input_fn, max_steps=20),
                  EvalSpec(keras_toy.eval_dataset, steps=None, start_delay_secs=0,
                           throttle_secs=0), ClusterConfig())
    events = [name for _, _, files in os.walk(tmp_path) for name in files
              if "tfevents" in name]
    assert events == []


class StepsAndMetrics(ContinuousEvalListener):
    def __init__(self):
        self.metrics = {}

    def after_eval(self, eval_result):
        self.metrics[eval_result.global_step] = dict(eval_result.metrics)
        return True


def _open_files_under(directory):
    """The files under `directory` this process holds open (Linux /proc)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory) + os.sep):
            found.append(target)
    return found


@pytest.mark.keras
def test_a_finished_run_leaves_no_event_file_open(tmp_path):
    """The summary writers are closed when training and its evaluations end, so a
    long-lived process (a notebook, a test session) running many jobs keeps no file
    handles of the finished ones."""
    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path), save_checkpoints_steps=20,
                           log_step_count_steps=20)
    run_job(trainer, TrainSpec(keras_toy.train_input_fn, max_steps=40),
                  EvalSpec(keras_toy.eval_dataset, steps=None, start_delay_secs=0,
                           throttle_secs=0), ClusterConfig())
    assert scalars(tmp_path)["loss"] and scalars(tmp_path / "eval")["loss"]
    assert _open_files_under(tmp_path) == []
    # The evaluator task of the same (finished) run: its writer is closed too.
    evaluator = ClusterConfig.from_env({"TF_CONFIG": json.dumps({
        "cluster": {"chief": ["localhost:2222"]}, "task": {"type": "evaluator", "index": 0}})})
    metrics, _ = run_job(trainer, TrainSpec(keras_toy.train_input_fn, max_steps=40),
                               EvalSpec(keras_toy.eval_dataset, steps=None,
                                        start_delay_secs=0, throttle_secs=0, name="again"),
                               evaluator, clock=FakeClock())  # no real wait for the record
    assert metrics["global_step"] == 40 and scalars(tmp_path / "eval_again")["loss"]
    assert _open_files_under(tmp_path) == []


@pytest.mark.keras
def test_without_progress_lines_or_summaries_the_launcher_still_gets_the_status(
        tmp_path, monkeypatch):
    """log_step_count_steps=None and summaries=False silence the logs and TensorBoard,
    not the live view of `trainexec launch`."""
    launch_dir = tmp_path / "launch"
    monkeypatch.setenv("TRAINEXEC_LAUNCH_DIR", str(launch_dir))
    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path / "model"),
                           save_checkpoints_steps=20, log_step_count_steps=None,
                           summaries=False)
    run_job(trainer, TrainSpec(keras_toy.train_input_fn, max_steps=40),
                  EvalSpec(keras_toy.eval_dataset, steps=None, start_delay_secs=0,
                           throttle_secs=0), ClusterConfig())
    record = read_statuses(str(launch_dir), ["local"])["local"]
    assert record["kind"] == TRAINING and (record["step"], record["max_steps"]) == (40, 40)
