"""trainexec/keras/trainer.py (with keras/fit/training.py and tasks/serving.py): KerasTrainer
jobs locally, in this process (and one local MirroredStrategy run in a child process of
tests/keras_programs). Clusters of real processes are
tests/cluster/test_keras_trainer_clusters.py."""

import json
import logging
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from fakes import ClockedLog, FakeClock, FakeServer, serve_as_keras_task, write_checkpoint
from processes import ROOT
from tf_configs import keras_plan
from trainexec.cluster.config import ClusterConfig
from trainexec.records.completion import read_training_complete, record_training_complete
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.errors import ConfigError
from trainexec.keras.evaluate.exporters import FinalExporter
from trainexec.records.finished_tasks import record_task_finished
from trainexec.evaluation.listeners import ListenerList
from trainexec.executor import TrainingExecutor
from trainexec.keras.trainer import KerasTrainer
from trainexec.contract.task_logging import LAUNCHED_TASK_ENV, configure_task_logging
from trainexec.keras.fit.training import segments
from trainexec.specs import EvalSpec, TrainSpec

PROGRAMS = os.path.join(os.path.dirname(__file__), "keras_programs")
sys.path.insert(0, PROGRAMS)
import keras_toy  # noqa: E402

pytestmark = pytest.mark.tf_line

LOCAL = ClusterConfig()


def run_job(trainer, train_spec, eval_spec, cluster=None, *, listeners=(), **options):
    """A Keras job's role through the production path: `TrainingExecutor(...).run()`
    (what `train_and_evaluate` runs), the job's listeners as its one listener."""
    return TrainingExecutor(trainer, train_spec, eval_spec,
                            continuous_eval_listener=ListenerList(listeners),
                            cluster=cluster, **options).run()


# -- the fit schedule ----------------------------------------------------------------

@pytest.mark.parametrize("start, max_steps, every, expected", [
    (0, 200, 20, [(20, 10)]),
    (0, 50, 20, [(20, 2), (10, 1)]),
    (0, 5, 20, [(5, 1)]),
    (40, 100, 20, [(20, 3)]),
    (30, 100, 20, [(10, 1), (20, 3)]),   # resumed between saves: back on the grid first
    (35, 38, 20, [(3, 1)]),
    (35, 75, 20, [(5, 1), (20, 1), (15, 1)]),
    (200, 200, 20, []),
    (250, 200, 20, []),                  # an earlier, longer run: nothing to train
    (0, 7, 1, [(1, 7)]),
])
def test_segments(start, max_steps, every, expected):
    plan = segments(start, max_steps, every)
    assert plan == expected
    saves, step = [], start
    for steps, epochs in plan:
        for _ in range(epochs):
            step += steps
            saves.append(step)
    assert step == max(start, max_steps)  # exactly max_steps steps in total
    assert all(s % every == 0 or s == max_steps for s in saves)


# -- validation ----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, words", [
    (dict(build_model=None), ("build_model", "None", "function")),
    (dict(build_model=keras_toy.build_dense()), ("build_model", "pass the function")),
    (dict(model_dir=""), ("model_dir", "''", "non-empty path")),
    (dict(model_dir=None), ("model_dir", "None")),
    (dict(save_checkpoints_steps=0), ("save_checkpoints_steps", "(0)", "positive integer")),
    (dict(save_checkpoints_steps=2.5), ("save_checkpoints_steps", "(2.5)")),
    (dict(save_checkpoints_steps=True), ("save_checkpoints_steps", "(True)")),
    (dict(keep_checkpoint_max=0), ("keep_checkpoint_max", "(0)", "or None")),
    (dict(verbose=3), ("verbose", "(3)", "0 (silent)")),
    (dict(log_step_count_steps=0), ("log_step_count_steps", "(0)", "or None")),
    (dict(callbacks="tensorboard"), ("callbacks", "'tensorboard'", "list")),
    (dict(callbacks=[object()]), ("callbacks", "object", "tf.keras.callbacks.Callback")),
])
def test_trainer_rejects(tmp_path, kwargs, words):
    args = dict(build_model=keras_toy.build_dense, model_dir=str(tmp_path))
    args.update(kwargs)
    with pytest.raises(ConfigError) as raised:
        KerasTrainer(**args)
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


def _specs(max_steps=50, throttle_secs=0, exporters=None, input_fn=keras_toy.train_input_fn):
    return (TrainSpec(input_fn, max_steps=max_steps),
            EvalSpec(keras_toy.eval_dataset, steps=None, start_delay_secs=0,
                     throttle_secs=throttle_secs, exporters=exporters))


class _Hook(tf.compat.v1.train.SessionRunHook):
    pass


@pytest.mark.parametrize("change, words", [
    (dict(train_spec=TrainSpec(keras_toy.train_input_fn)), ("max_steps is None",)),
    (dict(train_spec=TrainSpec(keras_toy.train_input_fn, 10, hooks=[_Hook()])),
     ("hooks", "KerasTrainer(callbacks=")),
    (dict(eval_spec=None), ("local evaluates", "EvalSpec")),
    (dict(poll_secs=0), ("poll_secs", "(0)")),
])
def test_a_keras_job_rejects(tmp_path, change, words):
    train_spec, eval_spec = _specs()
    args = dict(trainer=KerasTrainer(keras_toy.build_dense, str(tmp_path / "m")),
                train_spec=train_spec, eval_spec=eval_spec, cluster=LOCAL)
    args.update(change)
    with pytest.raises(ConfigError) as raised:
        run_job(**args)
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))
    assert not (tmp_path / "m").exists()


# -- serving (PSS workers and ps) ----------------------------------------------------

PSS_CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}


def _serving_plan(task):
    return keras_plan(PSS_CLUSTER, task)


def test_a_worker_serves_until_the_chief_finishes_saying_what_it_waits_for(tmp_path):
    model_dir = str(tmp_path)
    record_task_finished(model_dir, "chief:0")  # an earlier run's: does not count
    path = tmp_path / "trainexec" / "finished" / "chief-0.json"
    os.utime(path, (path.stat().st_atime - 100, path.stat().st_mtime - 100))
    clock = FakeClock()
    start = clock.now()

    def chief_finishes(clock):
        if clock.now() - start >= 130 and not getattr(clock, "done", False):
            clock.done = True
            record_task_finished(model_dir, "chief:0")
    clock.on_sleep = chief_finishes
    FakeServer.made.clear()
    with ClockedLog(clock) as log:
        server = serve_as_keras_task(_serving_plan("worker:0"), model_dir, 200,
                                     poll_secs=1.0, clock=clock, server_factory=FakeServer)
    assert [s.started for s in FakeServer.made] == [True] and server.job_name == "worker"
    assert 130 <= clock.now() - start <= 132
    messages = [(t - start, m) for t, m in log.messages("worker:0")]
    assert messages[0][0] == 0 and "until chief:0 records" in messages[0][1]
    waiting = [t for t, m in messages if "still serving" in m]
    assert waiting and waiting[0] <= 60 and all(b - a <= 60 for a, b in zip(waiting, waiting[1:]))
    assert "stops serving: chief:0 recorded that its training finished" in messages[-1][1]
    assert (tmp_path / "trainexec" / "finished" / "worker-0.json").exists()


def test_a_ps_restarted_after_the_run_ended_stops_at_once(tmp_path):
    model_dir = str(tmp_path)
    checkpoint = write_checkpoint(model_dir, 200, name="ckpt")
    tf.compat.v1.train.update_checkpoint_state(model_dir, checkpoint)
    record_training_complete(model_dir, checkpoint, 200, 200)
    clock = FakeClock()
    serve_as_keras_task(_serving_plan("ps:0"), model_dir, 200, clock=clock,
                        server_factory=FakeServer)
    assert clock.sleeps == []
    assert not (tmp_path / "trainexec" / "finished" / "ps-0.json").exists()


def test_an_earlier_runs_completion_record_keeps_it_serving(tmp_path):
    model_dir = str(tmp_path)
    checkpoint = write_checkpoint(model_dir, 100, name="ckpt")
    tf.compat.v1.train.update_checkpoint_state(model_dir, checkpoint)
    record_training_complete(model_dir, checkpoint, 100, 100)  # another max_steps
    os.utime(tmp_path / "trainexec" / "training_complete.json",
             (os.path.getmtime(tmp_path / "trainexec") - 100,) * 2)
    clock = FakeClock()
    clock.on_sleep = lambda c: len(c.sleeps) == 5 and record_training_complete(
        model_dir, checkpoint, 200, 200)
    serve_as_keras_task(_serving_plan("ps:0"), model_dir, 200, poll_secs=2.0,
                        clock=clock, server_factory=FakeServer)
    assert clock.sleeps == [2.0] * 5


# -- logging -------------------------------------------------------------------------

def test_task_logging_prefixes_lines_and_respects_a_users_configuration(monkeypatch, capsys):
    package = logging.getLogger("trainexec")
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.setattr(package, "handlers", [])
    monkeypatch.setattr(package, "propagate", True)
    level = package.level
    package.setLevel(logging.NOTSET)
    try:
        _check_task_logging(package, monkeypatch, capsys)
    finally:
        package.setLevel(level)


def _check_task_logging(package, monkeypatch, capsys):
    assert configure_task_logging("worker:1")
    assert configure_task_logging("worker:2")  # updates, does not add
    assert len(package.handlers) == 1
    logging.getLogger("trainexec.keras.fit.training").info("Saved checkpoint %s", "ckpt-20")
    logging.getLogger("trainexec.keras.fit.training").debug("not shown")
    assert capsys.readouterr().err == (
        "[worker:2] INFO trainexec.keras.fit.training: Saved checkpoint ckpt-20\n")
    # Under `trainexec launch`, which prefixes every output line itself: no second prefix.
    assert configure_task_logging("worker:2", environ={LAUNCHED_TASK_ENV: "worker:2"})
    logging.getLogger("trainexec.keras.fit.training").info("Saved checkpoint %s", "ckpt-40")
    assert capsys.readouterr().err == (
        "INFO trainexec.keras.fit.training: Saved checkpoint ckpt-40\n")

    monkeypatch.setattr(package, "handlers", [])
    monkeypatch.setattr(logging.getLogger(), "handlers", [logging.NullHandler()])
    assert not configure_task_logging("worker:1")  # the user's root handler decides
    assert package.handlers == []


# -- local runs (in this process) ----------------------------------------------------

class StepsSeen(ContinuousEvalListener):
    def __init__(self, stop_after=None):
        self.steps, self.stop_after = [], stop_after

    def after_eval(self, eval_result):
        self.steps.append(eval_result.global_step)
        return self.stop_after is None or len(self.steps) < self.stop_after


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1


class FailAtStep(tf.keras.callbacks.Callback):
    """Raises at the end of the epoch reaching `step`, before its checkpoint is saved."""

    def __init__(self, step):
        super().__init__()
        self.step = step

    def on_epoch_end(self, epoch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.step:
            raise RuntimeError(f"simulated crash at step {self.step}")


def _checkpoints(model_dir):
    state = tf.train.get_checkpoint_state(model_dir)
    return [os.path.basename(p) for p in state.all_model_checkpoint_paths]


@pytest.mark.keras
@pytest.mark.parametrize("model_name", ["dense", "custom"])
def test_local_run_trains_evaluates_after_saves_and_exports(tmp_path, model_name):
    model_dir = str(tmp_path / "model")
    seen, batches = StepsSeen(), CountBatches()
    trainer = KerasTrainer(keras_toy.BUILDERS[model_name], model_dir,
                           save_checkpoints_steps=20, keep_checkpoint_max=2,
                           callbacks=[batches])
    metrics, exports = run_job(trainer, *_specs(50, exporters=[FinalExporter()]),
                                     LOCAL, listeners=[seen])
    assert seen.steps == [20, 40, 50]
    assert batches.batches == 50
    assert _checkpoints(model_dir) == ["ckpt-40", "ckpt-50"]
    final = os.path.join(model_dir, "ckpt-50")
    assert metrics["global_step"] == 50
    fresh = keras_toy.evaluate_checkpoint(model_name, final)
    assert {k: metrics[k] for k in fresh} == pytest.approx(fresh, rel=1e-5)
    if model_name == "custom":  # the overridden train_step ran every step
        restored = keras_toy.restore(keras_toy.build_custom, final)
        assert float(restored.custom_steps.numpy()) == 50
    done = read_training_complete(model_dir)
    assert (done.global_step, done.checkpoint, done.max_steps) == (50, final, 50)
    assert exports == [os.path.join(model_dir, "export", "final", "50")]
    assert os.path.exists(os.path.join(exports[0], "saved_model.pb"))


@pytest.mark.keras
def test_local_run_throttles_evaluations_but_always_evaluates_the_end(tmp_path):
    seen = StepsSeen()
    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path), save_checkpoints_steps=10)
    # The fake clock does not move: after the first evaluation every save is throttled.
    metrics, _ = run_job(trainer, *_specs(50, throttle_secs=60), LOCAL,
                               listeners=[seen], clock=FakeClock())
    assert seen.steps == [10, 50]
    assert metrics["global_step"] == 50


@pytest.mark.keras
def test_local_run_resumes_at_its_last_saved_step(tmp_path, caplog):
    model_dir = str(tmp_path)
    crashing = KerasTrainer(keras_toy.build_custom, model_dir, save_checkpoints_steps=20,
                            callbacks=[FailAtStep(60)])
    with pytest.raises(RuntimeError, match="simulated crash at step 60"):
        run_job(crashing, *_specs(100), LOCAL)
    assert _checkpoints(model_dir) == ["ckpt-20", "ckpt-40"]
    assert read_training_complete(model_dir) is None

    batches, seen = CountBatches(), StepsSeen()
    restarted = KerasTrainer(keras_toy.build_custom, model_dir, save_checkpoints_steps=20,
                             callbacks=[batches])
    with caplog.at_level(logging.INFO, logger="trainexec"):
        metrics, _ = run_job(restarted, *_specs(100), LOCAL, listeners=[seen])
    assert f"Restored {os.path.join(model_dir, 'ckpt-40')}: training resumes at step 40" \
        in caplog.messages
    assert batches.batches == 60
    assert seen.steps == [60, 80, 100]
    assert _checkpoints(model_dir) == [f"ckpt-{s}" for s in (20, 40, 60, 80, 100)]
    assert metrics["global_step"] == 100
    restored = keras_toy.restore(keras_toy.build_custom, os.path.join(model_dir, "ckpt-100"))
    assert float(restored.custom_steps.numpy()) == 100
    assert read_training_complete(model_dir).global_step == 100

    # Restarted once more after the end: nothing left to train; the end is evaluated.
    again = CountBatches()
    metrics_again, _ = run_job(
        KerasTrainer(keras_toy.build_custom, model_dir, save_checkpoints_steps=20,
                     callbacks=[again]), *_specs(100), LOCAL)
    assert again.batches == 0
    assert metrics_again == pytest.approx(metrics)


def _build_with_a_repeated_step(at_step):
    """keras_toy's dense model whose optimizer counts step `at_step` twice, as it
    does under ParameterServerStrategy when a worker dies after updating the
    variables and the step runs again on another worker."""

    class RepeatsAStep(tf.keras.Sequential):
        def train_step(self, data):
            logs = super().train_step(data)
            iterations = self.optimizer.iterations
            tf.cond(tf.equal(iterations, at_step),
                    lambda: iterations.assign_add(1), lambda: iterations)
            return logs

    def build():
        model = RepeatsAStep([tf.keras.layers.Dense(1)])
        model.build((None, keras_toy.FEATURES))
        return keras_toy._compile(model)

    return build


@pytest.mark.keras
def test_a_repeated_step_realigns_the_saves_and_training_still_ends_at_max_steps(
        tmp_path, caplog):
    model_dir = str(tmp_path)
    batches = CountBatches()
    trainer = KerasTrainer(_build_with_a_repeated_step(45), model_dir,
                           save_checkpoints_steps=20, keep_checkpoint_max=10,
                           callbacks=[batches])
    with caplog.at_level(logging.INFO, logger="trainexec"):
        metrics, _ = run_job(trainer, *_specs(100), LOCAL)
    assert _checkpoints(model_dir) == [f"ckpt-{s}" for s in (20, 40, 61, 80, 100)]
    assert batches.batches == 99  # step 45 counted twice
    assert metrics["global_step"] == 100
    assert read_training_complete(model_dir).global_step == 100
    assert any("Step 61 at the end of an epoch planned to end at step 60" in m and
               "re-align to multiples of 20" in m for m in caplog.messages)


@pytest.mark.keras
def test_a_listener_stops_a_local_run_after_a_save(tmp_path):
    model_dir = str(tmp_path)
    seen = StepsSeen(stop_after=1)
    trainer = KerasTrainer(keras_toy.build_dense, model_dir, save_checkpoints_steps=20)
    metrics, exports = run_job(trainer, *_specs(100, exporters=[FinalExporter()]),
                                     LOCAL, listeners=[seen])
    assert seen.steps == [20]
    assert metrics["global_step"] == 20
    assert exports == [os.path.join(model_dir, "export", "final", "20")]  # still exported
    assert read_training_complete(model_dir).global_step == 20


@pytest.mark.keras
def test_a_local_run_whose_data_runs_out_stops_and_says_so(tmp_path, caplog):
    def thirty_batches():
        return keras_toy.train_input_fn_global().take(30)

    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path), save_checkpoints_steps=20)
    with caplog.at_level(logging.INFO, logger="trainexec"):
        metrics, _ = run_job(trainer, *_specs(100, input_fn=thirty_batches), LOCAL)
    # Keras 2 stops when the data runs out (step 30); Keras 3 starts the data again
    # in the next epoch and stops only in an epoch that cannot finish.
    step = metrics["global_step"]
    assert 30 <= step < 100
    done = read_training_complete(str(tmp_path))
    assert (done.global_step, os.path.basename(done.checkpoint)) == (step, f"ckpt-{step}")
    assert any("before max_steps 100" in m and "repeat the dataset" in m
               for m in caplog.messages)


@pytest.mark.keras
def test_a_local_mirrored_run_evaluates_outside_the_training_strategy(tmp_path):
    """Two replicas (two logical CPUs for two GPUs, in a process of its own): the
    evaluations after saves run during fit, yet outside its MirroredStrategy."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    prefix = str(tmp_path / "model")
    done = subprocess.run([sys.executable, os.path.join(PROGRAMS, "mirrored_local.py"), prefix],
                          capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "MirroredStrategy: 2 replica(s) in sync" in done.stderr
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [run["model"] for run in runs] == ["dense", "custom"]
    for run in runs:
        assert run["steps_evaluated"] == [20, 40, 50]
        fresh = keras_toy.evaluate_checkpoint(run["model"], f"{prefix}-{run['model']}/ckpt-50")
        assert {k: run["metrics"][k] for k in fresh} == pytest.approx(fresh, rel=1e-5)


@pytest.mark.estimator
@pytest.mark.keras
def test_a_keras_job_takes_tf_estimator_specs_locally_and_on_the_evaluator(tmp_path):
    """A program written for tf.estimator.train_and_evaluate hands its own
    tf.estimator TrainSpec and EvalSpec; the executor converts them, in the local run
    and on the evaluator alike."""
    model_dir = str(tmp_path)
    train_spec = tf.estimator.TrainSpec(keras_toy.train_input_fn, max_steps=30)
    eval_spec = tf.estimator.EvalSpec(keras_toy.eval_dataset, steps=None,
                                      start_delay_secs=0, throttle_secs=0)
    seen = StepsSeen()
    trainer = KerasTrainer(keras_toy.build_dense, model_dir, save_checkpoints_steps=10)
    metrics, _ = run_job(trainer, train_spec, eval_spec, LOCAL, listeners=[seen])
    assert seen.steps == [10, 20, 30]
    assert metrics["global_step"] == 30
    assert read_training_complete(model_dir).global_step == 30

    evaluator = ClusterConfig.from_dict({
        "cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
        "task": {"type": "evaluator", "index": 0}})
    on_evaluator = StepsSeen()
    evaluated, _ = run_job(
        KerasTrainer(keras_toy.build_dense, model_dir, save_checkpoints_steps=10),
        train_spec, eval_spec, evaluator, poll_secs=0.05, listeners=[on_evaluator])
    assert on_evaluator.steps == [30]
    assert evaluated == pytest.approx(metrics)
