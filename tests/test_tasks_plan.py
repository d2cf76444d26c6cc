"""trainexec/tasks/plan.py: the `TaskAction` words, a `RolePlan`'s checks and its log line,
and `JobSettings`' own checks (poll_secs, the EvalSpec an evaluating task asks for).
(Every trainer's plans: tests/test_trainer.py; tf.estimator specs parsed once:
tests/test_tasks_roles.py.)"""

import dataclasses

import pytest

from launch_fakes import FakeClock
from trainexec.cluster.config import ClusterConfig
from trainexec.cluster.server import WorkerDelay
from trainexec.errors import ConfigError
from trainexec.evaluation.listeners import ContinuousEvalListener
from trainexec.specs import EvalSpec, TrainSpec
from trainexec.tasks.plan import (COORDINATE, EVALUATE, SERVE, TRAIN, TRAIN_AND_EVALUATE,
                                  JobSettings, RolePlan, TaskAction)

pytestmark = pytest.mark.any_line


# Made once: checking a spec's hooks loads TensorFlow.
TRAIN_SPEC = TrainSpec(lambda: None, max_steps=20)
EVAL_SPEC = EvalSpec(lambda: None, throttle_secs=0)


def _settings(**fields) -> JobSettings:
    values = dict(train_spec=TRAIN_SPEC, eval_spec=EVAL_SPEC,
                  cluster=ClusterConfig(), clock=FakeClock(), poll_secs=1.0,
                  idle_timeout_secs=None, listener=ContinuousEvalListener())
    values.update(fields)
    return JobSettings(**values)


def test_an_action_reads_and_compares_as_its_word():
    assert [str(action) for action in (TRAIN, COORDINATE, SERVE, EVALUATE,
                                       TRAIN_AND_EVALUATE)] == [
        "train", "coordinate", "serve", "evaluate", "train and evaluate"]
    assert TRAIN_AND_EVALUATE == "train and evaluate" and f"{SERVE}" == "serve"
    assert TaskAction("evaluate") is EVALUATE


def test_a_plan_given_the_word_holds_the_action():
    plan = RolePlan("evaluator:0", "evaluate")
    assert plan.action is EVALUATE and type(plan.action) is TaskAction
    assert plan == RolePlan("evaluator:0", EVALUATE)  # one plan, however it was spelt


def test_coordinate_is_not_a_plans_action_and_the_error_lists_the_four_that_are():
    """A ParameterServerStrategy chief coordinates, but its RolePlan says TRAIN."""
    with pytest.raises(ValueError) as raised:
        RolePlan("chief:0", COORDINATE)
    assert str(raised.value) == (
        "RolePlan action 'coordinate' (a ParameterServerStrategy chief coordinates, and its "
        "plan says 'train') must be one of ['evaluate', 'serve', 'train', 'train and "
        "evaluate']")
    with pytest.raises(ValueError, match=r"^RolePlan action 'fly' must be one of \['eval"):
        RolePlan("chief:0", "fly")


def test_only_the_local_task_runs_alone():
    assert RolePlan("local", TRAIN_AND_EVALUATE, is_local=True).is_local
    with pytest.raises(ValueError, match="RolePlan for 'worker:0' has is_local=True: a "
                                         "local run's task is 'local'"):
        RolePlan("worker:0", TRAIN, is_local=True)


@pytest.mark.parametrize("plan, line", [
    (RolePlan("evaluator:0", EVALUATE), "evaluator:0 evaluates new checkpoints"),
    (RolePlan("ps:0", SERVE, starts_server=True),
     "ps:0 serves until training is over; starts a TensorFlow server"),
    (RolePlan("local", TRAIN_AND_EVALUATE, writes_checkpoints=True, is_local=True,
              strategy="MirroredStrategy"),
     "local trains and evaluates after checkpoint saves (MirroredStrategy); "
     "writes checkpoints"),
    (RolePlan("chief:0", TRAIN, starts_server=True, start_delay=True,
              waits_for_chief=True, writes_checkpoints=True, strategy="s"),
     "chief:0 trains (s); starts a TensorFlow server, staggered start, waits for the "
     "chief to initialize the model, writes checkpoints"),
])
def test_describe_says_only_what_the_plan_does_in_a_fixed_order(plan, line):
    assert plan.describe() == line


def test_a_plan_is_frozen():
    plan = RolePlan("chief:0", TRAIN)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.action = SERVE
    assert dataclasses.replace(plan, action=SERVE).describe() == (
        "chief:0 serves until training is over")


@pytest.mark.parametrize("poll_secs", [0, -1.0, float("nan"), True, "1"])
def test_job_settings_refuse_a_poll_interval_that_is_not_positive_seconds(poll_secs):
    with pytest.raises(ConfigError) as raised:
        _settings(poll_secs=poll_secs)
    assert str(raised.value) == f"`poll_secs` ({poll_secs}) must be > 0 seconds, e.g. 1.0"


def test_the_eval_spec_for_an_evaluating_task_or_the_fix_naming_that_task():
    assert _settings().eval_spec_for("evaluator:0") is EVAL_SPEC
    with pytest.raises(ConfigError) as raised:
        _settings(eval_spec=None).eval_spec_for("master:0")
    assert str(raised.value) == (
        "eval_spec is None, but master:0 evaluates: pass an EvalSpec (trainexec's or "
        "tf.estimator's) to train_and_evaluate or TrainingExecutor")


def test_trainexecs_own_specs_are_kept_as_given_and_the_estimator_options_default_off():
    settings = _settings(eval_spec=None)
    assert settings.train_spec is TRAIN_SPEC and settings.eval_spec is None
    assert (settings.train_hooks, settings.server_factory, settings.ps_serves_forever) == (
        (), None, False)
    assert settings.worker_delay == WorkerDelay(secs_per_index=5.0, max_secs=None)
