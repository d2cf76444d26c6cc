"""trainexec/tasks/: every role's steps and records, in order, for a fake trainer's hooks and
for the Estimator's and Keras's.

The table says, for each role of each trainer (its `RolePlan`, as the trainer plans it),
the steps `trainexec.tasks` takes and the records it writes, in order. A fake trainer's
hooks journal each call; the records are journaled by wrapping the functions that write
them, which still write the real files.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import sys
import types

import pytest

from fakes import FakeClock, FakeEstimator, FakeServer
from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.records import completion, finished_tasks
from trainexec.specs import EvalSpec, TrainSpec
from trainexec.tasks.result import TrainResult
from trainexec.tasks import roles, training
from trainexec.tasks.hooks import BeforeTraining, Evaluation, Trained, TrainerHooks
from trainexec.tasks.serving import ServingJob
from trainexec.trainer import JobSettings

pytestmark = pytest.mark.tf_line

PROGRAMS = os.path.join(os.path.dirname(__file__), "keras_programs")
sys.path.insert(0, PROGRAMS)

ESTIMATOR_CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],
                     "ps": ["127.0.0.1:3"], "evaluator": ["127.0.0.1:4"]}
MASTER_CLUSTER = {"master": ["127.0.0.1:1"], "ps": ["127.0.0.1:3"]}
MWMS_CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}
PSS_CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"],
               "evaluator": ["127.0.0.1:4"]}

# The records, by the name the journal gives them.
CLEARED = "record: completion cleared"
COMPLETE = "record: training complete"
FINISHED = "record: task finished"

TRAIN_CHIEF = ["begin", CLEARED, "start server", "train", COMPLETE, FINISHED,
               "after records", "close"]
TRAIN_WORKER = ["begin", "start server", "start delay", "wait for chief", "train",
                "chief is ready", FINISHED, "after records", "close"]
TRAIN_MASTER = ["begin", "eval listeners", "eval target", CLEARED, "start server", "train",
                "evaluate after save", "final evaluation", "eval listeners closed", COMPLETE,
                FINISHED, "after records", "close"]
TRAIN_LOCAL = ["begin", "eval listeners", "eval target", CLEARED, "train",
               "evaluate after save", "final evaluation", "eval listeners closed", COMPLETE,
               "after records", "close"]
EVALUATE = ["begin", "eval listeners", "eval target", "evaluate until done",
            "eval target closed", "eval listeners closed", "close"]
SERVE_PS = ["begin", "serving job", "start server", "serve until training is over",
            "close"]
SERVE_WORKER = ["begin", "serving job", "start server", "serve until training is over",
                FINISHED, "close"]
MWMS_CHIEF = ["begin", CLEARED, "train", COMPLETE, FINISHED, "after records", "close"]
MWMS_WORKER = ["begin", "train", FINISHED, "after records", "close"]
# A trainexec.estimator RunConfig's MultiWorkerMirroredStrategy: every task starts its
# server (or finds the strategy's) and trains at once, without waiting for the chief.
ESTIMATOR_MWMS_WORKER = ["begin", "start server", "train", FINISHED, "after records",
                         "close"]
WORKERS_ONLY = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}


def estimator_plan(cluster, task):
    from trainexec.estimator_trainer.trainer import role_plan

    task_type = None if task == "local" else task.split(":")[0]
    return role_plan(task_type, task), _cluster(cluster, task)


def estimator_mwms_plan(cluster, task):
    from trainexec.estimator_engine.strategy_checks import MULTI_WORKER_MIRRORED
    from trainexec.estimator_trainer.trainer import role_plan

    config = _cluster(cluster, task)
    return role_plan(config.task_type, task, strategy=MULTI_WORKER_MIRRORED,
                     leads=config.is_chief), config


def keras_plan(cluster, task):
    from trainexec.keras.strategy import plan_for
    from trainexec.keras.trainer import role_plan

    config = _cluster(cluster, task)
    return role_plan(plan_for(config, keras_3=False, gpus=0)), config


def _cluster(cluster, task):
    if task == "local":
        return ClusterConfig()
    job, index = task.split(":")
    return ClusterConfig(cluster=cluster, task_type=job, task_index=int(index))


# Role by role: the steps in order, and the (trainer, cluster) whose plan for that task
# takes them; where both trainers share a row, their sequences are the same.
ROLES = [
    ("chief:0", TRAIN_CHIEF, [("estimator", ESTIMATOR_CLUSTER)]),
    ("chief:0", MWMS_CHIEF, [("keras", MWMS_CLUSTER), ("keras", PSS_CLUSTER)]),
    ("chief:0", TRAIN_CHIEF, [("estimator-mwms", MWMS_CLUSTER)]),
    ("worker:0", TRAIN_CHIEF, [("estimator-mwms", WORKERS_ONLY)]),  # worker 0 leads
    ("worker:1", ESTIMATOR_MWMS_WORKER, [("estimator-mwms", WORKERS_ONLY)]),
    ("worker:0", ESTIMATOR_MWMS_WORKER, [("estimator-mwms", MWMS_CLUSTER)]),
    ("worker:0", TRAIN_WORKER, [("estimator", ESTIMATOR_CLUSTER)]),
    ("worker:0", MWMS_WORKER, [("keras", MWMS_CLUSTER)]),
    ("worker:0", SERVE_WORKER, [("keras", PSS_CLUSTER)]),
    ("master:0", TRAIN_MASTER, [("estimator", MASTER_CLUSTER)]),
    ("ps:0", SERVE_PS, [("estimator", ESTIMATOR_CLUSTER), ("keras", PSS_CLUSTER)]),
    ("evaluator:0", EVALUATE, [("estimator", ESTIMATOR_CLUSTER), ("keras", PSS_CLUSTER)]),
    ("local", TRAIN_LOCAL, [("estimator", None), ("keras", None)]),
]
PLANNERS = {"estimator": estimator_plan, "estimator-mwms": estimator_mwms_plan,
            "keras": keras_plan}
SUFFIXES = {id(PSS_CLUSTER): "-pss", id(WORKERS_ONLY): "-workers-only"}
TABLE = [pytest.param(trainer, cluster, task, steps,
                      id=f"{trainer}-{task}{SUFFIXES.get(id(cluster), '')}")
         for task, steps, planners in ROLES for trainer, cluster in planners]


class JournalingHooks(TrainerHooks):
    """`TrainerHooks` of a trainer without a model: each call goes to `journal` (8
    members; `words` and `run_evaluation` are the defaults)."""

    def __init__(self, model_dir, journal):
        self.model_dir, self.journal = str(model_dir), journal

    @contextlib.contextmanager
    def session(self):
        self.journal.append("begin")
        try:
            yield
        finally:
            self.journal.append("close")

    def start_server(self):
        self.journal.append("start server")
        return object()

    def before_training(self, plan):
        self.journal.append("start delay")
        journal = self.journal

        @contextlib.contextmanager
        def waiting_for_chief():
            journal.append("wait for chief")
            yield
            journal.append("chief is ready")

        return BeforeTraining(start_delay_secs=3.0, waiting_for_chief=waiting_for_chief())

    def train(self, plan, on_save, record_finished):
        self.journal.append("train")
        if on_save is not None:
            on_save.after_save(10, "ckpt-10")
        return Trained(step=20, checkpoint="ckpt-20", final_step=20)

    def after_records(self, plan, trained):
        self.journal.append("after records")

    @contextlib.contextmanager
    def evaluation(self):
        self.journal.append("eval listeners")
        self.journal.append("eval target")
        journal = self.journal

        class Target:
            model_dir = self.model_dir

            def close(self):
                journal.append("eval target closed")

        yield Evaluation(Target())
        self.journal.append("eval listeners closed")

    def serving_job(self):
        self.journal.append("serving job")
        return ServingJob(task="?", model_dir=self.model_dir, waited_for=frozenset(),
                          max_steps=20)


@pytest.fixture
def journal(monkeypatch):
    """The journal: every record `trainexec.tasks` writes (still written), and the
    evaluation engine's calls (not run)."""
    entries: list = []

    def journaled(name, write):
        def record(*args, **kwargs):
            entries.append(name)
            return write(*args, **kwargs)
        return record

    monkeypatch.setattr(training, "clear_training_complete",
                        journaled(CLEARED, completion.clear_training_complete))
    monkeypatch.setattr(training, "record_training_complete",
                        journaled(COMPLETE, completion.record_training_complete))
    for module in (training, roles):
        monkeypatch.setattr(module, "record_task_finished",
                            journaled(FINISHED, finished_tasks.record_task_finished))

    class OnSave:
        def __init__(self, *args, **kwargs):
            self.eval_result, self.export_results = None, None

        def after_save(self, step, path=None):
            entries.append("evaluate after save")
            return True

        def finish(self, step, path=None):
            entries.append("final evaluation")
            self.eval_result = types.SimpleNamespace(metrics={"global_step": step})
            self.export_results = []

    monkeypatch.setattr(training, "EvaluateOnSave", OnSave)
    monkeypatch.setattr(roles, "evaluate_until_done",
                        lambda *args, **kwargs: entries.append("evaluate until done")
                        or ({"global_step": 20}, []))

    def serve(job, start_server, latest_step, poll_secs, clock):
        start_server()
        entries.append("serve until training is over")

    monkeypatch.setattr(roles, "serve_until_training_over", serve)
    return entries


def _settings(cluster, clock=None):
    return JobSettings(
        train_spec=TrainSpec(lambda: None, max_steps=20),
        eval_spec=EvalSpec(lambda: None, throttle_secs=0), cluster=cluster,
        clock=clock or FakeClock(), poll_secs=1.0, idle_timeout_secs=None,
        listener=ContinuousEvalListener())


@pytest.mark.parametrize("trainer, cluster, task, steps", TABLE)
def test_every_role_takes_its_steps_in_order(tmp_path, journal, trainer, cluster, task,
                                             steps):
    plan, config = PLANNERS[trainer](cluster, task)
    clock = FakeClock()
    hooks = JournalingHooks(tmp_path, journal)
    assert isinstance(hooks, TrainerHooks)
    result = roles.run_role(plan, hooks, _settings(config, clock))
    assert journal == steps
    # One return contract for every trainer: a TrainResult on the evaluator and in a
    # local run, None in the other roles (a master too, as tf.estimator).
    returns = task in ("local", "evaluator:0")
    assert result == (TrainResult({"global_step": 20}, []) if returns else None)
    assert clock.sleeps == ([3.0] if "start delay" in steps else [])
    # The records are on disk too.
    assert (completion.read_training_complete(str(tmp_path)) is not None) == (COMPLETE in steps)
    assert (finished_tasks.FinishedTasks(str(tmp_path), since_nsec=0).finished()
            == ({config.task_name} if FINISHED in steps else set()))


def test_ps_serves_forever_when_asked(tmp_path, journal):
    hooks = JournalingHooks(tmp_path, journal)
    server = FakeServer(types.SimpleNamespace(as_dict=dict), "ps", 0, None, None, True)
    hooks.start_server = lambda: journal.append("start server") or server
    plan, config = estimator_plan(ESTIMATOR_CLUSTER, "ps:0")
    settings = dataclasses.replace(_settings(config), ps_serves_forever=True)
    roles.run_role(plan, hooks, settings)
    assert journal == ["begin", "start server", "close"] and server.joined


@pytest.mark.parametrize("trainer, cluster, task", [
    ("estimator", ESTIMATOR_CLUSTER, "evaluator:0"), ("estimator", None, "local"),
    ("keras", PSS_CLUSTER, "evaluator:0"), ("keras", None, "local")])
def test_an_evaluating_role_without_an_eval_spec_names_the_task_and_the_fix(
        tmp_path, journal, trainer, cluster, task):
    plan, config = (estimator_plan if trainer == "estimator" else keras_plan)(cluster, task)
    settings = dataclasses.replace(_settings(config), eval_spec=None)
    with pytest.raises(ConfigError, match=rf"eval_spec is None, but {plan.task} evaluates: "
                                          r"pass an EvalSpec"):
        roles.run_role(plan, JournalingHooks(tmp_path, journal), settings)
    assert CLEARED not in journal and "train" not in journal and journal[-1] == "close"


def test_job_settings_parse_a_tf_estimator_spec_once_into_trainexecs_own(tmp_path):
    """A tf.estimator spec (duck-typed here: the same fields) is trainexec's own in
    every role, however the settings were made."""
    TheirTrainSpec = collections.namedtuple("TrainSpec", "input_fn max_steps hooks")
    TheirEvalSpec = collections.namedtuple("EvalSpec", EvalSpec._fields)
    theirs = TheirEvalSpec(lambda: None, 5, "eval", (), (), 0, 7)
    settings = JobSettings(train_spec=TheirTrainSpec(lambda: None, 9, ()), eval_spec=theirs,
                           cluster=ClusterConfig(), clock=FakeClock(), poll_secs=1.0,
                           idle_timeout_secs=None, listener=ContinuousEvalListener())
    assert type(settings.train_spec) is TrainSpec and settings.train_spec.max_steps == 9
    assert type(settings.eval_spec) is EvalSpec
    assert (settings.eval_spec.steps, settings.eval_spec.name,
            settings.eval_spec.throttle_secs) == (5, "eval", 7)
    again = dataclasses.replace(settings, poll_secs=2.0)
    assert again.eval_spec is settings.eval_spec
    with pytest.raises(TypeError, match="`eval_spec` must be a trainexec.EvalSpec or "
                                        "tf.estimator.EvalSpec"):
        dataclasses.replace(settings, eval_spec="eval")


def test_a_failing_step_still_closes_the_hooks_and_writes_no_later_record(tmp_path, journal):
    hooks = JournalingHooks(tmp_path, journal)

    def train(plan, on_save, record_finished):
        journal.append("train")
        raise RuntimeError("out of memory")

    hooks.train = train
    plan, config = estimator_plan(ESTIMATOR_CLUSTER, "chief:0")
    with pytest.raises(RuntimeError, match="out of memory"):
        roles.run_role(plan, hooks, _settings(config))
    assert journal == ["begin", CLEARED, "start server", "train", "close"]


def test_a_task_leaving_before_training_returns_records_finishing_through_the_sequence(
        tmp_path, journal):
    """A MultiWorkerMirroredStrategy peer's watchdog ends the process from inside
    `train`: the record it writes first is the sequence's."""
    hooks = JournalingHooks(tmp_path, journal)

    def train(plan, on_save, record_finished):
        journal.append("train")
        record_finished()
        raise SystemExit(0)  # what the watchdog's os._exit(0) stands for

    hooks.train = train
    plan, config = keras_plan(MWMS_CLUSTER, "worker:0")
    with pytest.raises(SystemExit):
        roles.run_role(plan, hooks, _settings(config))
    assert journal == ["begin", "train", FINISHED, "close"]
    assert finished_tasks.FinishedTasks(str(tmp_path), since_nsec=0).finished() == {"worker:0"}


# -- the two trainers' own hooks ---------------------------------------------------------
LONE_CHIEF = {"chief": ["127.0.0.1:1"]}


def _records_of_a_chief(journal, trainer, model_dir):
    """Runs `trainer` as the chief of a one-task cluster, for real; the records it wrote."""
    from trainexec.executor import TrainingExecutor
    import keras_toy

    input_fn = keras_toy.train_input_fn if trainer.__class__.__name__ == "KerasTrainer" \
        else (lambda: None)
    TrainingExecutor(trainer, TrainSpec(input_fn, max_steps=20),
                     EvalSpec(input_fn, throttle_secs=0),
                     cluster=ClusterConfig(cluster=LONE_CHIEF, task_type="chief",
                                           task_index=0),
                     clock=FakeClock(), server_factory=FakeServer).run()
    return [entry for entry in journal if entry.startswith("record: ")]


def test_the_estimators_hooks_write_the_chiefs_records_in_the_sequences_order(
        tmp_path, journal):
    from trainexec.estimator_trainer.trainer import EstimatorTrainer

    trainer = EstimatorTrainer(FakeEstimator(tmp_path, "chief"))
    assert _records_of_a_chief(journal, trainer, tmp_path) == [CLEARED, COMPLETE, FINISHED]
    assert completion.read_training_complete(str(tmp_path)).global_step == 20


@pytest.mark.keras
def test_keras_hooks_write_the_chiefs_records_in_the_same_order(tmp_path, journal):
    import keras_toy
    from trainexec.keras.trainer import KerasTrainer

    trainer = KerasTrainer(keras_toy.build_dense, str(tmp_path), save_checkpoints_steps=10)
    assert _records_of_a_chief(journal, trainer, tmp_path) == [CLEARED, COMPLETE, FINISHED]
    assert completion.read_training_complete(str(tmp_path)).global_step == 20


def test_a_worker_restarted_after_the_run_finished_skips_its_staggered_start(tmp_path,
                                                                              journal):
    """Chaos seed 14 of issue 36: a worker restarted after the job had succeeded waited
    its staggered start before it saw max_steps saved. With the run's completion
    record at max_steps it goes straight to training (which ends at once)."""
    completion.record_training_complete(str(tmp_path), str(tmp_path / "model.ckpt-20"),
                                        global_step=20, max_steps=20)
    plan, config = estimator_plan(ESTIMATOR_CLUSTER, "worker:0")
    clock = FakeClock()
    roles.run_role(plan, JournalingHooks(tmp_path, journal), _settings(config, clock))
    assert journal == TRAIN_WORKER  # the same steps...
    assert clock.sleeps == []  # ...without the 3 s wait


def test_a_worker_of_an_unfinished_run_still_staggers_its_start(tmp_path, journal):
    completion.record_training_complete(str(tmp_path), str(tmp_path / "model.ckpt-10"),
                                        global_step=10, max_steps=20)  # an earlier run's
    plan, config = estimator_plan(ESTIMATOR_CLUSTER, "worker:0")
    clock = FakeClock()
    roles.run_role(plan, JournalingHooks(tmp_path, journal), _settings(config, clock))
    assert clock.sleeps == [3.0]
