"""trainexec/trainer.py, estimator_trainer.py and the executor's dispatch: what each
role does comes from the trainer (an Estimator, a KerasTrainer, or a trainer of the
three members the `Trainer` protocol names), and the same
`trainexec.train_and_evaluate(trainer, train_spec, eval_spec)` call runs them all."""

import contextlib
import dataclasses
import json
import logging
import os
import sys

import pytest

import trainexec
from fakes import (DirectoryTarget, FakeClock, RecordingExporter, StubEstimator,
                   point_state_file_at, write_checkpoint)
from trainexec.cluster.config import ClusterConfig
from trainexec.records.completion import read_training_complete
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.records.finished_tasks import FinishedTasks
from trainexec.errors import ConfigError
from trainexec.estimator_trainer.trainer import EstimatorTrainer
from trainexec.keras.strategy import plan_for
from trainexec.keras.trainer import KerasTrainer, role_plan
from trainexec.specs import EvalSpec, TrainSpec
from trainexec.executor import as_trainer
from trainexec.tasks.hooks import Evaluation, Trained, TrainerHooks
from trainexec.tasks.roles import run_role
from trainexec.trainer import (EVALUATE, SERVE, TRAIN, TRAIN_AND_EVALUATE, JobSettings,
                               RolePlan, Trainer)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "keras_programs"))
import keras_toy  # noqa: E402

pytestmark = pytest.mark.tf_line

ESTIMATOR_CLUSTER = {"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"]}
MWMS_CLUSTER = {"chief": ["h:1"], "worker": ["h:2", "h:3"]}


def _cluster(cluster, task_type=None, index=0, environment=None):
    if task_type is None:
        return ClusterConfig()
    config = {"cluster": cluster, "task": {"type": task_type, "index": index}}
    if environment:
        config["environment"] = environment
    return ClusterConfig.from_env({"TF_CONFIG": json.dumps(config)})


# -- the Estimator's roles -----------------------------------------------------------

@pytest.mark.parametrize("task_type, index, environment, expected", [
    (None, 0, None, RolePlan("local", TRAIN_AND_EVALUATE, writes_checkpoints=True,
                             is_local=True)),
    ("chief", 0, None, RolePlan("chief:0", TRAIN, starts_server=True, writes_checkpoints=True,
                                strategy="between-graph replication")),
    ("worker", 1, None, RolePlan("worker:1", TRAIN, starts_server=True, start_delay=True,
                                 waits_for_chief=True, strategy="between-graph replication")),
    ("ps", 0, None, RolePlan("ps:0", SERVE, starts_server=True,
                             strategy="between-graph replication")),
    ("evaluator", 0, None, RolePlan("evaluator:0", EVALUATE)),
    # Google's environment starts the training tasks' servers itself; a ps starts its
    # own, as tf.estimator's does.
    ("worker", 0, "google", RolePlan("worker:0", TRAIN, start_delay=True, waits_for_chief=True,
                                     strategy="between-graph replication")),
    ("ps", 0, "google", RolePlan("ps:0", SERVE, starts_server=True,
                                 strategy="between-graph replication")),
])
def test_estimator_role_plans(task_type, index, environment, expected):
    cluster = _cluster(ESTIMATOR_CLUSTER, task_type, index, environment)
    stub = StubEstimator("/tmp/unused")
    stub.config.task_type, stub.config.task_id = task_type, index
    assert EstimatorTrainer(stub).plan_role(cluster) == expected


def test_the_master_trains_and_evaluates():
    cluster = _cluster({"master": ["h:1"], "worker": ["h:2"]}, "master")
    stub = StubEstimator("/tmp/unused")
    stub.config.task_type = "master"
    plan = EstimatorTrainer(stub).plan_role(cluster)
    assert (plan.action, plan.start_delay, plan.writes_checkpoints) == (
        TRAIN_AND_EVALUATE, False, True)


def test_an_estimator_refuses_a_cluster_without_a_chief():
    stub = StubEstimator("/tmp/unused")
    stub.config.task_type = "worker"
    with pytest.raises(ConfigError, match='no "chief".*MultiWorkerMirroredStrategy'):
        EstimatorTrainer(stub).plan_role(_cluster({"worker": ["h:1", "h:2"]}, "worker"))


# -- the KerasTrainer's roles --------------------------------------------------------

@pytest.mark.parametrize("cluster, task_type, index, expected", [
    (None, None, 0, RolePlan("local", TRAIN_AND_EVALUATE, writes_checkpoints=True,
                             is_local=True, strategy="default strategy")),
    (MWMS_CLUSTER, "chief", 0, RolePlan("chief:0", TRAIN, writes_checkpoints=True,
                                        strategy="MultiWorkerMirroredStrategy")),
    (MWMS_CLUSTER, "worker", 1, RolePlan("worker:1", TRAIN,
                                         strategy="MultiWorkerMirroredStrategy")),
    ({"worker": ["h:1", "h:2"]}, "worker", 0,
     RolePlan("worker:0", TRAIN, writes_checkpoints=True,
              strategy="MultiWorkerMirroredStrategy")),
    (ESTIMATOR_CLUSTER, "chief", 0, RolePlan("chief:0", TRAIN, writes_checkpoints=True,
                                             strategy="ParameterServerStrategy")),
    (ESTIMATOR_CLUSTER, "worker", 1, RolePlan("worker:1", SERVE, starts_server=True,
                                              strategy="ParameterServerStrategy")),
    (ESTIMATOR_CLUSTER, "ps", 0, RolePlan("ps:0", SERVE, starts_server=True,
                                          strategy="ParameterServerStrategy")),
    ({**MWMS_CLUSTER, "evaluator": ["h:9"]}, "evaluator", 0, RolePlan("evaluator:0", EVALUATE)),
])
def test_keras_role_plans(cluster, task_type, index, expected):
    """No Keras task waits out a start delay or for the chief; only PSS servers start
    a standard server (MWMS owns its own)."""
    plan = plan_for(_cluster(cluster, task_type, index), keras_3=False, gpus=0)
    assert role_plan(plan) == expected


def test_role_plan_describes_itself_for_the_log():
    plan = RolePlan("worker:1", TRAIN, starts_server=True, start_delay=True,
                    waits_for_chief=True, strategy="between-graph replication")
    assert plan.describe() == (
        "worker:1 trains (between-graph replication); starts a TensorFlow server, "
        "staggered start, waits for the chief to initialize the model")
    with pytest.raises(ValueError, match="'dance' must be one of"):
        RolePlan("chief:0", "dance")
    with pytest.raises(ValueError, match="'chief:0' has is_local=True"):
        RolePlan("chief:0", TRAIN, is_local=True)


# -- the executor dispatches to the trainer ------------------------------------------

def test_as_trainer_keeps_a_trainer_and_wraps_an_estimator(tmp_path):
    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path))
    assert as_trainer(trainer) is trainer
    wrapped = as_trainer(StubEstimator(str(tmp_path)))
    assert isinstance(wrapped, EstimatorTrainer) and wrapped.model_dir == str(tmp_path)
    with pytest.raises(TypeError):
        as_trainer(object())


def test_a_keras_trainer_refuses_estimator_only_options(tmp_path):
    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path))
    specs = (TrainSpec(keras_toy.train_input_fn, max_steps=10),
             EvalSpec(keras_toy.eval_dataset, steps=None))
    executor = trainexec.TrainingExecutor(trainer, *specs, cluster=ClusterConfig(),
                                          train_hooks=[_hook()])
    with pytest.raises(ConfigError, match="train_hooks are Estimator SessionRunHooks"):
        executor.run()
    executor = trainexec.TrainingExecutor(trainer, *specs, cluster=ClusterConfig())
    with pytest.raises(ConfigError, match=r"call TrainingExecutor.run\(\)"):
        executor.run_chief()


def _keras_settings(listener=None, max_steps=20):
    return JobSettings(
        train_spec=TrainSpec(keras_toy.train_input_fn, max_steps=max_steps),
        eval_spec=EvalSpec(keras_toy.eval_dataset, steps=None, throttle_secs=0),
        cluster=ClusterConfig(), clock=FakeClock(), poll_secs=1.0, idle_timeout_secs=None,
        listener=listener or ContinuousEvalListener())


@pytest.mark.parametrize("changes", [
    dict(start_delay=True), dict(waits_for_chief=True), dict(starts_server=True)])
def test_a_keras_trainer_refuses_a_plan_it_cannot_carry_out(tmp_path, changes):
    """Its strategies bring the tasks together, and own their servers."""
    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path / "model"))
    plan = dataclasses.replace(trainer.plan_role(ClusterConfig()), **changes)
    with pytest.raises(ConfigError, match="KerasTrainer cannot carry out this role: local "
                       "trains and evaluates"):
        trainer.task_hooks(plan, _keras_settings())
    assert not (tmp_path / "model").exists()


class _Counting(ContinuousEvalListener):
    def __init__(self):
        self.calls = 0

    def before_eval(self):
        self.calls += 1
        return True


@pytest.mark.keras
def test_a_keras_trainer_carries_out_its_plan_not_its_task_type(tmp_path):
    """A local task whose plan only trains: no evaluation, and no results."""
    model_dir = str(tmp_path / "model")
    trainer = KerasTrainer(keras_toy.build_dense, model_dir, save_checkpoints_steps=10)
    plan = dataclasses.replace(trainer.plan_role(ClusterConfig()), action=TRAIN)
    listener = _Counting()
    settings = _keras_settings(listener)
    assert run_role(plan, trainer.task_hooks(plan, settings), settings) is None  # nothing evaluated
    assert listener.calls == 0
    assert read_training_complete(model_dir).global_step == 20
    assert FinishedTasks(model_dir, since_nsec=0).finished() == set()  # it ran alone


def _hook():
    import tensorflow as tf

    return tf.compat.v1.train.SessionRunHook()


@pytest.mark.keras
def test_train_and_evaluate_runs_a_keras_trainer_locally(tmp_path, caplog):
    """The issue's contract, exactly: one call, (metrics, exports) back."""
    model_dir = str(tmp_path / "model")
    trainer = trainexec.KerasTrainer(keras_toy.build_dense, model_dir=model_dir,
                                     save_checkpoints_steps=20)
    with caplog.at_level(logging.INFO, logger="trainexec"):
        metrics, exports = trainexec.train_and_evaluate(
            trainer, trainexec.TrainSpec(keras_toy.train_input_fn, max_steps=60),
            trainexec.EvalSpec(keras_toy.eval_dataset, steps=None, start_delay_secs=0,
                               throttle_secs=0))
    assert metrics["global_step"] == 60
    fresh = keras_toy.evaluate(keras_toy.restore(keras_toy.build_dense,
                                                 os.path.join(model_dir, "ckpt-60")))
    assert {k: metrics[k] for k in fresh} == pytest.approx(fresh, rel=1e-5)
    assert exports == []
    assert "Role: local trains and evaluates after checkpoint saves (default strategy)" \
        in caplog.text
    assert trainexec.read_training_complete(model_dir).global_step == 60


# -- a trainer of the three documented members (no TrainerBase) -----------------------

class _WritingHooks(TrainerHooks):
    """Trains by writing real checkpoints at steps 10 and 20; evaluates them with a
    `DirectoryTarget` (the step as metrics)."""

    def __init__(self, model_dir):
        self.model_dir = model_dir

    def train(self, plan, on_save, record_finished):
        for step in (10, 20):
            path = write_checkpoint(self.model_dir, step)
            point_state_file_at(self.model_dir, path)
            if on_save is not None:
                on_save.after_save(step, path)
        return Trained(step=20, checkpoint=path, final_step=20)

    @contextlib.contextmanager
    def evaluation(self):
        yield Evaluation(DirectoryTarget(self.model_dir))


class ThreeMembers:
    """A trainer as `trainexec.trainer.Trainer` documents one: `model_dir`, `plan_role`,
    `task_hooks`, and nothing else (no `cluster_for`, no `plan_task`)."""

    def __init__(self, model_dir):
        self.model_dir = model_dir

    def plan_role(self, cluster):
        if cluster.role == "local":
            return RolePlan("local", TRAIN_AND_EVALUATE, writes_checkpoints=True,
                            is_local=True)
        if cluster.task_type == "chief":
            return RolePlan(cluster.task_name, TRAIN, writes_checkpoints=True)
        if cluster.task_type == "evaluator":
            return RolePlan(cluster.task_name, EVALUATE)
        raise ConfigError(f"ThreeMembers plays no {cluster.task_name}")

    def task_hooks(self, plan, settings):
        return _WritingHooks(self.model_dir)


def _input_fn():
    return None


def test_a_trainer_of_the_three_documented_members_is_a_trainer(tmp_path):
    trainer = ThreeMembers(str(tmp_path))
    assert not hasattr(trainer, "cluster_for") and not hasattr(trainer, "plan_task")
    assert isinstance(trainer, Trainer)
    assert as_trainer(trainer) is trainer


def test_a_trainer_of_three_members_trains_and_evaluates_locally(tmp_path, no_tf_config):
    model_dir = str(tmp_path)
    exporter = RecordingExporter()
    metrics, exports = trainexec.train_and_evaluate(
        ThreeMembers(model_dir), TrainSpec(_input_fn, max_steps=20),
        EvalSpec(_input_fn, exporters=[exporter], throttle_secs=0))
    assert metrics["global_step"] == 20
    assert exports == [os.path.join(model_dir, "export", "recorder")]
    assert [call["final"] for call in exporter.calls] == [False, True]  # 10, then 20
    assert read_training_complete(model_dir).global_step == 20


CHIEF_AND_EVALUATOR = {"chief": ["127.0.0.1:1"], "evaluator": ["127.0.0.1:2"]}


def test_a_trainer_of_three_members_plays_its_cluster_roles(tmp_path):
    """The chief trains and records; the evaluator evaluates the last checkpoint. The
    executor runs each as the cluster it was given (the default `cluster_for`), and
    `run_chief()` is refused (the default `plan_task`: it plays TF_CONFIG's role)."""
    model_dir = str(tmp_path)

    def executor(task_type):
        cluster = ClusterConfig(cluster=CHIEF_AND_EVALUATOR, task_type=task_type,
                                task_index=0)
        ex = trainexec.TrainingExecutor(
            ThreeMembers(model_dir), TrainSpec(_input_fn, max_steps=20),
            EvalSpec(_input_fn, throttle_secs=0, start_delay_secs=0), cluster=cluster,
            clock=FakeClock())
        assert ex.cluster == cluster
        return ex

    assert executor("chief").run() is None
    assert read_training_complete(model_dir).global_step == 20
    assert FinishedTasks(model_dir, since_nsec=0).finished() == {"chief:0"}
    metrics, exports = executor("evaluator").run()
    assert (metrics["global_step"], exports) == (20, [])
    with pytest.raises(ConfigError, match=r"ThreeMembers plays the role TF_CONFIG gives "
                                          r"it: call TrainingExecutor.run\(\)"):
        executor("chief").run_chief()


class _HooksElsewhere(ThreeMembers):
    """A trainer whose hooks (or evaluation target) were built for another directory."""

    def __init__(self, model_dir, hooks_dir, target_dir=None):
        super().__init__(model_dir)
        self.hooks_dir, self.target_dir = hooks_dir, target_dir

    def task_hooks(self, plan, settings):
        hooks = _WritingHooks(self.hooks_dir)
        target_dir = self.target_dir

        if target_dir is not None:
            @contextlib.contextmanager
            def evaluation():
                yield Evaluation(DirectoryTarget(target_dir))
            hooks.evaluation = evaluation
        return hooks


@pytest.mark.parametrize("task_type, elsewhere, what", [
    ("chief", {"hooks_dir": "{other}"}, "its task hooks"),
    ("evaluator", {"hooks_dir": "{run}", "target_dir": "{other}"}, "the evaluation target"),
])
def test_a_trainer_whose_parts_name_two_model_dirs_is_refused_before_it_runs(
        tmp_path, task_type, elsewhere, what):
    run, other = str(tmp_path / "run"), str(tmp_path / "other")
    dirs = {k: v.format(run=run, other=other) for k, v in elsewhere.items()}
    cluster = ClusterConfig(cluster=CHIEF_AND_EVALUATOR, task_type=task_type, task_index=0)
    executor = trainexec.TrainingExecutor(
        _HooksElsewhere(run, **dirs), TrainSpec(_input_fn, max_steps=20),
        EvalSpec(_input_fn, throttle_secs=0, start_delay_secs=0), cluster=cluster,
        clock=FakeClock())
    with pytest.raises(ConfigError) as raised:
        executor.run()
    assert str(raised.value).startswith(
        f"model_dir: the trainer's is {run!r} but the model_dir of {what} is {other!r}")
    assert not os.path.exists(other) or not os.listdir(other)  # nothing written there


def test_one_model_dir_written_two_ways_is_one(tmp_path):
    from trainexec.tasks.hooks import same_model_dir
    assert same_model_dir(str(tmp_path), str(tmp_path) + "/", "x") == str(tmp_path)
    assert same_model_dir(tmp_path, str(tmp_path / "a" / ".."), "x") == str(tmp_path)
    assert same_model_dir("gs://b/run/", "gs://b/run", "x") == "gs://b/run/"
    with pytest.raises(ConfigError, match="gs://b/other"):
        same_model_dir("gs://b/run", "gs://b/other", "the serving job")


class _HalfTrainer:
    model_dir = "/tmp/unused"

    def plan_role(self, cluster):
        raise AssertionError("not a trainer")


@pytest.mark.parametrize("model, lacks", [
    (object(), "as a trainer it lacks model_dir, plan_role, task_hooks; as an Estimator "
               "it lacks config, model_dir, train, evaluate, latest_checkpoint"),
    (_HalfTrainer(), "as a trainer it lacks task_hooks; as an Estimator it lacks config, "
                     "train, evaluate, latest_checkpoint"),
])
def test_neither_a_trainer_nor_an_estimator_is_refused_naming_both(model, lacks):
    with pytest.raises(TypeError) as raised:
        as_trainer(model)
    message = str(raised.value)
    assert message.startswith(
        "`estimator` must be a trainer (model_dir, plan_role, task_hooks: "
        "trainexec.trainer.Trainer) or a tf.estimator.Estimator (or another model with "
        f"config, model_dir, train, evaluate, latest_checkpoint); "
        f"{type(model).__name__} is neither: {lacks}")
