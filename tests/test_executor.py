"""trainexec/executor.py: the executor plans each TF_CONFIG shape's role, logs it and
carries out that plan with the trainer's hooks (a `FakeTrainer`, no model, whose role
the sequence does not run); then the Estimator's roles through it (a `FakeEstimator`,
whose 'training' writes real checkpoints)."""

import dataclasses
import json
import logging
import os
import time
import types

import pytest

from trainexec import (ClusterConfig, ConfigError, ContinuousEvalListener, EvalSpec,
                       TrainSpec, TrainingExecutor, WorkerDelay, read_training_complete,
                       train_and_evaluate)
from trainexec.records.finished_tasks import FinishedTasks, record_task_finished
from trainexec.trainer import SERVE, TRAIN_AND_EVALUATE, Trainer, TrainerBase
import trainexec.executor
from fakes import (FakeClock, FakeEstimator, FakeHooks, FakeServer, FakeTrainer,
                   RecordingExporter, run_fake_role)

pytestmark = pytest.mark.tf_line

CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"],
           "ps": ["127.0.0.1:4"]}


def input_fn():
    return None


@pytest.fixture(autouse=True)
def fake_trainers_roles(monkeypatch):
    """A FakeTrainer's role is not carried out: `run_fake_role` hands back its result
    (every other trainer's runs, `trainexec.tasks.roles.run_role`)."""
    real = trainexec.executor.run_role

    def run_role(plan, hooks, settings):
        if isinstance(hooks, FakeHooks):
            return run_fake_role(plan, hooks, settings)
        return real(plan, hooks, settings)

    monkeypatch.setattr(trainexec.executor, "run_role", run_role)


# -- the executor, with a fake Trainer ---------------------------------------------------

MASTER_CLUSTER = {"master": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}


@pytest.mark.parametrize("cluster, task_type, index, running, role", [
    (None, None, 0, "Running training and evaluation locally (non-distributed).",
     "local trains and evaluates after checkpoint saves; writes checkpoints"),
    (CLUSTER, "chief", 0, "Running chief:0 of the cluster.",
     "chief:0 trains (fake); starts a TensorFlow server, writes checkpoints"),
    (CLUSTER, "worker", 1, "Running worker:1 of the cluster.",
     "worker:1 trains (fake); starts a TensorFlow server, staggered start, waits for the "
     "chief to initialize the model"),
    (CLUSTER, "ps", 0, "Running ps:0 of the cluster.",
     "ps:0 serves until training is over (fake); starts a TensorFlow server"),
    ({**CLUSTER, "evaluator": ["127.0.0.1:5"]}, "evaluator", 0,
     "Running evaluator:0 of the cluster.",
     "evaluator:0 evaluates new checkpoints"),
    (MASTER_CLUSTER, "master", 0, "Running master:0 of the cluster.",
     "master:0 trains and evaluates after checkpoint saves (fake); starts a TensorFlow "
     "server, writes checkpoints"),
])
def test_the_executor_plans_logs_and_carries_out_the_role(monkeypatch, caplog, cluster,
                                                          task_type, index, running, role):
    if cluster is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", json.dumps(
            {"cluster": cluster, "task": {"type": task_type, "index": index}}))
    trainer, clock, listener = FakeTrainer(), FakeClock(), ContinuousEvalListener()
    ex = TrainingExecutor(trainer, TrainSpec(input_fn, max_steps=20), EvalSpec(input_fn),
                          continuous_eval_listener=listener, clock=clock, poll_secs=0.5,
                          worker_delay=WorkerDelay(0))
    with caplog.at_level(logging.INFO, logger="trainexec.executor"):
        result = ex.run()
    # Planned once, for the task TF_CONFIG names, and that same plan carried out.
    assert trainer.planned == [ex.cluster]
    assert ex.cluster.task_name == ("local" if task_type is None else f"{task_type}:{index}")
    (plan,) = trainer.plans
    assert [ran for ran, _ in trainer.ran] == [plan]
    assert [r.getMessage() for r in caplog.records if r.name == "trainexec.executor"] == [
        running, f"Role: {role}"]
    # With the job's settings, and its result handed back.
    _, settings = trainer.ran[0]
    assert settings.cluster == ex.cluster and settings.train_spec.max_steps == 20
    assert (settings.clock, settings.listener, settings.poll_secs) == (clock, listener, 0.5)
    assert settings.worker_delay == WorkerDelay(0)
    assert result == FakeTrainer.result_for(plan)
    if task_type in (None, "evaluator"):  # the roles that return what they evaluated
        assert result[0]["task"] == ex.cluster.task_name
    else:
        assert result is None


def test_a_fake_trainer_is_a_trainer_and_train_and_evaluate_runs_it(no_tf_config):
    trainer = FakeTrainer()
    assert isinstance(trainer, Trainer)
    metrics, exports = train_and_evaluate(trainer, TrainSpec(input_fn, max_steps=20),
                                          EvalSpec(input_fn))
    assert (metrics["task"], exports) == ("local", ["export of local"])
    assert [plan.action for plan, _ in trainer.ran] == [TRAIN_AND_EVALUATE]


def test_a_cluster_the_trainer_refuses_runs_nothing(caplog):
    trainer = FakeTrainer(refuse="fake trainers train no ps")
    ex = TrainingExecutor(trainer, TrainSpec(input_fn), EvalSpec(input_fn),
                          cluster=ClusterConfig(cluster=CLUSTER, task_type="ps", task_index=0))
    with caplog.at_level(logging.INFO, logger="trainexec.executor"):
        with pytest.raises(ConfigError, match="fake trainers train no ps"):
            ex.run()
    assert trainer.ran == [] and "Role:" not in caplog.text


@pytest.mark.parametrize("method, task_type", [
    ("run_chief", "chief"), ("run_worker", "worker"), ("run_master", "master"),
    ("run_ps", "ps"), ("run_evaluator", "evaluator"), ("run_local", None)])
def test_run_a_role_asks_the_trainer_for_that_role(method, task_type):
    trainer = FakeTrainer()
    ex = TrainingExecutor(trainer, TrainSpec(input_fn), EvalSpec(input_fn),
                          cluster=ClusterConfig(cluster=CLUSTER, task_type="worker",
                                                task_index=1))
    result = getattr(ex, method)()
    assert [task for task, _ in trainer.tasks] == [task_type]
    assert trainer.tasks[0][1].task_name == "worker:1"
    # That task type's plan is what runs, with the job's settings.
    (plan, settings), = trainer.ran
    assert plan.task == ("local" if task_type is None else f"{task_type}:1")
    assert settings.cluster == ex.cluster and trainer.planned == []
    assert result == FakeTrainer.result_for(plan)


# -- the Estimator's roles ---------------------------------------------------------------



def executor(trainer, task_type=None, index=0, eval_spec=None, clock=None, **kw):
    cluster = (ClusterConfig() if task_type is None else
               ClusterConfig(cluster=CLUSTER, task_type=task_type, task_index=index))
    spec = eval_spec or EvalSpec(input_fn, throttle_secs=0, start_delay_secs=0)
    return TrainingExecutor(trainer, TrainSpec(input_fn, max_steps=20), spec,
                            cluster=cluster, clock=clock or FakeClock(),
                            server_factory=FakeServer, **kw)


def test_local_returns_metrics_and_exports(tmp_path):
    exporter = RecordingExporter()
    trainer = FakeEstimator(tmp_path)
    spec = EvalSpec(input_fn, exporters=[exporter], throttle_secs=0)
    metrics, exports = executor(trainer, eval_spec=spec).run()
    assert metrics["global_step"] == 20
    assert exports == [os.path.join(str(tmp_path), "export", "recorder")]
    assert exporter.calls[-1]["final"] is True
    assert read_training_complete(str(tmp_path)).global_step == 20


def test_chief_trains_then_records_completion(tmp_path):
    trainer = FakeEstimator(tmp_path, "chief")
    assert executor(trainer, "chief").run() is None
    assert len(trainer.train_calls) == 1 and trainer.evaluated == []
    done = read_training_complete(str(tmp_path))
    assert (done.global_step, done.max_steps) == (20, 20)


def test_chief_clears_previous_runs_completion(tmp_path):
    from trainexec.records.completion import record_training_complete
    record_training_complete(str(tmp_path), None, 5, 5)
    trainer = FakeEstimator(tmp_path, "chief")
    trainer.train = lambda **kw: (_ for _ in ()).throw(RuntimeError("crash"))
    with pytest.raises(RuntimeError):
        executor(trainer, "chief").run()
    assert read_training_complete(str(tmp_path)) is None


@pytest.mark.parametrize("index,delay,expected", [
    (0, WorkerDelay(), [5.0]), (1, WorkerDelay(), [10.0]), (1, WorkerDelay(0), []),
])
def test_worker_waits_its_delay_then_trains(tmp_path, index, delay, expected):
    clock = FakeClock()
    trainer = FakeEstimator(tmp_path, "worker", index)
    executor(trainer, "worker", index, clock=clock, worker_delay=delay).run()
    assert clock.sleeps == expected and len(trainer.train_calls) == 1
    assert read_training_complete(str(tmp_path)) is None  # only the chief records


@pytest.mark.parametrize("task_type, expected", [("worker", 0.25), ("chief", 30)])
def test_only_non_chief_workers_recheck_the_chiefs_model_every_poll(
        tmp_path, task_type, expected):
    import tensorflow as tf
    trainer = FakeEstimator(tmp_path, task_type)
    seen = []
    train = trainer.train

    def train_and_note_recheck_interval(**kwargs):
        seen.append(tf.compat.v1.train.SessionManager()._recovery_wait_secs)
        return train(**kwargs)

    trainer.train = train_and_note_recheck_interval
    executor(trainer, task_type, poll_secs=0.25, worker_delay=WorkerDelay(0)).run()
    assert seen == [expected]
    assert tf.compat.v1.train.SessionManager()._recovery_wait_secs == 30


def test_run_config_max_worker_delay_is_honoured(tmp_path):
    clock = FakeClock()
    trainer = FakeEstimator(tmp_path, "worker", 1, max_delay=3)
    executor(trainer, "worker", 1, clock=clock).run()
    assert clock.sleeps == [3.0]


def test_ps_serves_forever_when_asked(tmp_path):
    executor(FakeEstimator(tmp_path, "ps"), "ps", ps_serves_forever=True).run()
    assert FakeServer.last.joined and FakeServer.last.args["job_name"] == "ps"


def age_records(model_dir, secs):
    """Makes the finished records in `model_dir` look `secs` older."""
    directory = os.path.join(model_dir, "trainexec", "finished")
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        stat = os.stat(path)
        os.utime(path, (stat.st_atime - secs, stat.st_mtime - secs))


def test_ps_exits_once_every_training_task_has_finished(tmp_path):
    clock = FakeClock()
    for task in ("chief:0", "worker:0", "worker:1"):  # an earlier run's records
        record_task_finished(str(tmp_path), task)
    age_records(str(tmp_path), 3600)
    # worker:1's machine clock is an hour behind: only the file times count.
    finishing = iter([("worker:1", time.time() - 3600), ("chief:0", None), None,
                      ("worker:0", None)])

    def next_task_finishes(_clock):
        task = next(finishing, None)
        if task:
            record_task_finished(str(tmp_path), *task)

    clock.on_sleep = next_task_finishes
    FakeServer.last = None
    executor(FakeEstimator(tmp_path, "ps"), "ps", clock=clock, poll_secs=0.5).run()
    assert FakeServer.last is None  # it never joined the server
    assert clock.sleeps == [0.5] * 4  # exits on the first look after worker:0 finished
    assert os.path.exists(tmp_path / "trainexec" / "started" / "ps-0.json")


class StillServing(Exception):
    pass


def test_ps_keeps_serving_while_a_task_has_not_finished(tmp_path):
    clock = FakeClock()

    def chief_finishes_then_time_passes(_clock):
        if len(clock.sleeps) == 1:
            record_task_finished(str(tmp_path), "chief:0")
        if len(clock.sleeps) == 50:
            raise StillServing(f"after {clock.time - 1000:.0f} s")

    clock.on_sleep = chief_finishes_then_time_passes
    with pytest.raises(StillServing, match="after 50 s"):
        executor(FakeEstimator(tmp_path, "ps"), "ps", clock=clock).run()


@pytest.mark.parametrize("task_type, index", [("chief", 0), ("worker", 1)])
def test_training_tasks_record_that_they_finished(tmp_path, task_type, index):
    watch = FinishedTasks(str(tmp_path), since_nsec=0)
    executor(FakeEstimator(tmp_path, task_type, index), task_type, index,
             worker_delay=WorkerDelay(0)).run()
    assert watch.finished() == {f"{task_type}:{index}"}


def test_a_training_task_that_fails_records_nothing(tmp_path):
    trainer = FakeEstimator(tmp_path, "worker", 0)
    trainer.train = lambda **kw: (_ for _ in ()).throw(RuntimeError("crash"))
    with pytest.raises(RuntimeError):
        executor(trainer, "worker", 0, worker_delay=WorkerDelay(0)).run()
    assert FinishedTasks(str(tmp_path), since_nsec=0).finished() == set()


def test_master_evaluates_during_training(tmp_path):
    trainer = FakeEstimator(tmp_path, "master")
    cluster = ClusterConfig(cluster={"master": ["127.0.0.1:1"], "ps": ["127.0.0.1:4"]},
                            task_type="master", task_index=0)
    TrainingExecutor(trainer, TrainSpec(input_fn, max_steps=20),
                     EvalSpec(input_fn, throttle_secs=0), cluster=cluster,
                     server_factory=FakeServer, clock=FakeClock()).run()
    assert [os.path.basename(p) for p in trainer.evaluated] == ["model.ckpt-10",
                                                                "model.ckpt-20"]
    assert read_training_complete(str(tmp_path)).global_step == 20
    assert FinishedTasks(str(tmp_path), since_nsec=0).finished() == {"master:0"}


def test_evaluator_runs_until_training_done(tmp_path):
    trainer = FakeEstimator(tmp_path, "evaluator")
    FakeEstimator(tmp_path).train(input_fn)  # a finished run's checkpoints
    from trainexec.records.completion import record_training_complete
    record_training_complete(str(tmp_path), trainer.latest_checkpoint(), 20, 20)
    metrics, _ = executor(trainer, "evaluator").run()
    assert metrics["global_step"] == 20


class Replanned(TrainerBase):
    """A Trainer that changes its trainer's plan: what runs is what the plan says."""

    def __init__(self, trainer, **changes):
        self.trainer, self.changes = trainer, changes
        self.model_dir = trainer.model_dir

    def plan_role(self, cluster):
        return dataclasses.replace(self.trainer.plan_role(cluster), **self.changes)

    def task_hooks(self, plan, settings):
        return self.trainer.task_hooks(plan, settings)


def estimator_trainer(model_dir, task_type=None, index=0):
    from trainexec.estimator_trainer.trainer import EstimatorTrainer
    return EstimatorTrainer(FakeEstimator(model_dir, task_type, index))


def test_an_estimator_worker_carries_out_its_plan_not_its_task_type(tmp_path):
    clock = FakeClock()
    trainer = estimator_trainer(tmp_path, "worker", 1)
    executor(Replanned(trainer, start_delay=False, writes_checkpoints=True), "worker", 1,
             clock=clock).run()
    assert clock.sleeps == []  # no staggered start in its plan
    assert len(trainer.estimator.train_calls) == 1
    assert read_training_complete(str(tmp_path)).global_step == 20  # it writes them


def test_an_estimator_chief_that_does_not_write_checkpoints_records_no_completion(tmp_path):
    trainer = estimator_trainer(tmp_path, "chief")
    import tensorflow as tf
    listener = tf.compat.v1.train.CheckpointSaverListener()  # the train spec's
    ex = TrainingExecutor(Replanned(trainer, writes_checkpoints=False),
                          TrainSpec(input_fn, max_steps=20, saving_listeners=[listener]),
                          EvalSpec(input_fn), cluster=ClusterConfig(
                              cluster=CLUSTER, task_type="chief", task_index=0),
                          clock=FakeClock(), server_factory=FakeServer)
    ex.run()
    assert read_training_complete(str(tmp_path)) is None
    # The train spec's saving listeners go where the checkpoints are written.
    assert trainer.estimator.train_calls[0]["saving_listeners"] is None
    assert FinishedTasks(str(tmp_path), since_nsec=0).finished() == {"chief:0"}


def test_an_estimator_chief_whose_plan_evaluates_evaluates_its_saves(tmp_path):
    trainer = estimator_trainer(tmp_path, "chief")
    assert executor(Replanned(trainer, action=TRAIN_AND_EVALUATE), "chief").run() is None
    assert [os.path.basename(p) for p in trainer.estimator.evaluated] == [
        "model.ckpt-10", "model.ckpt-20"]


def test_an_estimator_ps_serves_as_planned(tmp_path):
    trainer = estimator_trainer(tmp_path, "ps")
    plan = trainer.plan_role(ClusterConfig(cluster=CLUSTER, task_type="ps", task_index=0))
    assert (plan.action, plan.starts_server) == (SERVE, True)
    executor(trainer, "ps", ps_serves_forever=True).run()
    assert FakeServer.last.joined


class CountingListener(ContinuousEvalListener):
    def __init__(self):
        self.before = self.after = 0

    def before_eval(self):
        self.before += 1
        return True

    def after_eval(self, eval_result):
        self.after += 1
        return True


def test_local_listener_sees_every_evaluation(tmp_path):
    listener = CountingListener()
    executor(FakeEstimator(tmp_path), continuous_eval_listener=listener).run()
    assert (listener.before, listener.after) == (2, 2)


def test_cluster_without_chief_is_explained(tmp_path):
    cluster = ClusterConfig(cluster={"worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]},
                            task_type="worker", task_index=0)
    ex = TrainingExecutor(FakeEstimator(tmp_path, "worker"), TrainSpec(input_fn),
                          EvalSpec(input_fn), cluster=cluster)
    with pytest.raises(ConfigError, match='no "chief"'):
        ex.run()


def test_not_a_model():
    with pytest.raises(TypeError, match="lacks config, model_dir"):
        TrainingExecutor(object(), TrainSpec(input_fn), EvalSpec(input_fn),
                         cluster=ClusterConfig())


def test_eval_spec_checked_first(tmp_path):
    with pytest.raises(TypeError, match="`eval_spec` must be"):
        train_and_evaluate(object(), "not a spec", None)


def test_executor_reads_tf_config_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": CLUSTER, "task": {"type": "ps", "index": 0}}))
    ex = TrainingExecutor(FakeEstimator(tmp_path, "ps"), TrainSpec(input_fn),
                          EvalSpec(input_fn), server_factory=FakeServer)
    assert ex.cluster.role == "ps"


def test_google_environment_starts_no_server(tmp_path):
    made = []

    class Counting(FakeServer):
        def __init__(self, *a, **kw):
            made.append(1)
            super().__init__(*a, **kw)
    cluster = ClusterConfig(cluster=CLUSTER, task_type="chief", task_index=0,
                            environment="google")
    TrainingExecutor(FakeEstimator(tmp_path, "chief"), TrainSpec(input_fn, max_steps=20),
                     EvalSpec(input_fn), cluster=cluster, server_factory=Counting,
                     clock=FakeClock()).run()
    assert made == []
    assert read_training_complete(str(tmp_path)).global_step == 20


def test_local_without_max_steps_gives_final_export_once(tmp_path):
    from fakes import FinalOnlyExporter
    latest, final = RecordingExporter("latest"), FinalOnlyExporter("final")
    trainer = FakeEstimator(tmp_path)
    ex = TrainingExecutor(trainer, TrainSpec(input_fn, max_steps=None),
                          EvalSpec(input_fn, exporters=[latest, final], throttle_secs=0),
                          cluster=ClusterConfig(), clock=FakeClock())
    metrics, exports = ex.run()
    assert metrics["global_step"] == 20
    assert [(c["step"], c["final"]) for c in latest.calls] == [(10, False), (20, False)]
    assert [(c["step"], c["final"]) for c in final.calls] == [
        (10, False), (20, False), (20, True)]
    base = os.path.join(str(tmp_path), "export")
    assert exports == [os.path.join(base, "latest"), os.path.join(base, "final")]


def test_distribute_coordinator_is_refused_clearly(tmp_path):
    trainer = FakeEstimator(tmp_path, "worker", 0)
    trainer.config._distribute_coordinator_mode = "independent_worker"
    trainer.config.train_distribute = types.SimpleNamespace()
    with pytest.raises(ConfigError, match="distribute coordinator, which trainexec does "
                       "not drive"):
        executor(trainer, "chief").run()


def test_run_config_protocol_is_used_for_the_server(tmp_path):
    trainer = FakeEstimator(tmp_path, "ps")
    trainer.config.protocol = "grpc+custom"
    executor(trainer, "ps", ps_serves_forever=True).run()
    assert FakeServer.last.args["protocol"] == "grpc+custom"


# -- TF_CONFIGs real cluster managers write (Kubeflow TFJob) ------------------------------
def run_task(tmp_path, cluster, task_type, index=0, clock=None, **options):
    """Runs one task of `cluster` (a TF_CONFIG cluster, as written) with a FakeEstimator."""
    config = ClusterConfig.from_dict({"cluster": cluster,
                                      "task": {"type": task_type, "index": index}})
    trainer = FakeEstimator(tmp_path, task_type, index)
    FakeServer.made.clear()
    result = TrainingExecutor(
        trainer, TrainSpec(input_fn, max_steps=20),
        EvalSpec(input_fn, throttle_secs=0, start_delay_secs=0), cluster=config,
        clock=clock or FakeClock(), server_factory=FakeServer,
        worker_delay=WorkerDelay(0), **options).run()
    return trainer, result


def test_chief_of_a_tfjob_with_zero_worker_replicas_trains(tmp_path):
    cluster = {"chief": ["127.0.0.1:1"], "worker": [], "ps": [], "evaluator": []}
    trainer, _ = run_task(tmp_path, cluster, "chief")
    assert len(trainer.train_calls) == 1
    assert read_training_complete(str(tmp_path)).global_step == 20
    # RunConfig gives this chief a gRPC master (the empty jobs count as jobs), so
    # its server runs; the empty jobs are not part of it.
    assert [s.args["cluster_spec"] for s in FakeServer.made] == [{"chief": ["127.0.0.1:1"]}]


def test_ps_of_a_tfjob_with_zero_worker_replicas_waits_for_the_chief_only(tmp_path):
    clock = FakeClock()
    clock.on_sleep = lambda _clock: record_task_finished(str(tmp_path), "chief:0")
    cluster = {"chief": ["127.0.0.1:1"], "worker": [], "ps": ["127.0.0.1:4"]}
    run_task(tmp_path, cluster, "ps", clock=clock, poll_secs=0.5)
    assert clock.sleeps == [0.5]  # exits on the first look after chief:0 finished
    assert [s.args["cluster_spec"] for s in FakeServer.made] == [
        {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:4"]}]


def test_master_trains_and_evaluates_beside_an_evaluator_job(tmp_path):
    cluster = {"master": ["127.0.0.1:1"], "ps": ["127.0.0.1:4"], "evaluator": ["127.0.0.1:5"]}
    trainer, _ = run_task(tmp_path, cluster, "master")
    assert [os.path.basename(p) for p in trainer.evaluated] == ["model.ckpt-10",
                                                                "model.ckpt-20"]
    assert read_training_complete(str(tmp_path)).global_step == 20
    assert [s.args["cluster_spec"] for s in FakeServer.made] == [
        {"master": ["127.0.0.1:1"], "ps": ["127.0.0.1:4"]}]  # the evaluator stands outside


TWO_EVALUATORS = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],
                  "evaluator": ["127.0.0.1:5", "127.0.0.1:6"]}


@pytest.mark.parametrize("task_type", ["chief", "worker"])
def test_trainers_of_a_tfjob_with_two_evaluator_replicas_train(tmp_path, task_type):
    trainer, _ = run_task(tmp_path, TWO_EVALUATORS, task_type)
    assert len(trainer.train_calls) == 1
    assert FinishedTasks(str(tmp_path), since_nsec=0).finished() == {f"{task_type}:0"}


def test_first_of_two_evaluator_replicas_evaluates(tmp_path):
    FakeEstimator(tmp_path).train(input_fn)  # a finished run's checkpoints
    from trainexec.records.completion import record_training_complete
    record_training_complete(str(tmp_path), FakeEstimator(tmp_path).latest_checkpoint(), 20, 20)
    _, (metrics, _) = run_task(tmp_path, TWO_EVALUATORS, "evaluator", 0)
    assert metrics["global_step"] == 20


def test_second_of_two_evaluator_replicas_is_refused_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": TWO_EVALUATORS, "task": {"type": "evaluator", "index": 1}}))
    with pytest.raises(ConfigError, match=r"evaluator:1 cannot run: there can be only one "
                       r"evaluator.*Set the TFJob's Evaluator replicas to 1"):
        TrainingExecutor(FakeEstimator(tmp_path, "evaluator", 1), TrainSpec(input_fn),
                         EvalSpec(input_fn), server_factory=FakeServer)


def test_tfjob_with_zero_chief_replicas_is_explained(tmp_path):
    cluster = ClusterConfig.from_dict({"cluster": {"chief": [], "worker": ["127.0.0.1:2"]},
                                       "task": {"type": "worker", "index": 0}})
    trainer = FakeEstimator(tmp_path, "worker")
    ex = TrainingExecutor(trainer, TrainSpec(input_fn), EvalSpec(input_fn), cluster=cluster)
    with pytest.raises(ConfigError, match=r'no "chief" \(or "master"\) job \(cluster.chief is '
                       r"an empty list\).*suits Keras MultiWorkerMirroredStrategy"):
        ex.run()
    assert trainer.train_calls == []
