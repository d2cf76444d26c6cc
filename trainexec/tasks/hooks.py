"""`TrainerHooks`: what a trainer supplies to the role sequences of `trainexec.tasks`.

The sequences (which step comes first, which record is written when) are written once,
in `trainexec.tasks.training` and `trainexec.tasks.roles`; a trainer only says how each
step is done for its kind of model. Two trainers ship with trainexec:
`trainexec.estimator_trainer.hooks.EstimatorHooks` and `trainexec.keras.hooks.KerasHooks`.

A trainer makes its hooks for one task (`trainer.task_hooks(plan, settings)`), checking
there what its model cannot do (a Keras job refuses Estimator hooks, say), so that a bad
setting fails before anything starts. Its hooks subclass `TrainerHooks`, which has a
default for every step a trainer may not need: a trainer writes `model_dir`, `train` and
`evaluation`, and whichever of `session`, `before_training`, `after_records`,
`start_server` and `serving_job` its plans use (`words` and `run_evaluation` have
defaults too).

Example (the fake trainer of the role table test):
    ```python
    class Hooks(TrainerHooks):
        model_dir = "/tmp/run"

        @contextlib.contextmanager
        def session(self): yield
        def start_server(self): return server
        def before_training(self, plan): return BeforeTraining(start_delay_secs=3.0)
        def train(self, plan, on_save, record_finished): return Trained(step=20)
        def after_records(self, plan, trained): ...
        @contextlib.contextmanager
        def evaluation(self): yield Evaluation(target)
        def serving_job(self): return ServingJob(...)
    ```
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any, Callable, ContextManager, Iterator, NamedTuple, Sequence

from trainexec.errors import ConfigError
from trainexec.evaluation.evaluate_on_save import EvaluateOnSave, OnSaveWording, evaluate_here
from trainexec.evaluation.target import EvaluationTarget
from trainexec.tasks.plan import RolePlan
from trainexec.tasks.serving import ServingJob

__all__ = ["ON_SAVE_WORDING", "BeforeTraining", "Evaluation", "Trained", "TrainerHooks",
           "TrainerWords", "same_model_dir"]


@dataclasses.dataclass(frozen=True)
class Trained:
    """How training ended: what a training task's `train` hook reports.

    Attributes:
      step: the step training reached (None: unknown, e.g. no checkpoint).
      checkpoint: the checkpoint it ended on (None if there is none, or on a task that
        does not write the run's checkpoints).
      final_step: the step whose checkpoint gets the final evaluation after saves
        (None: no final evaluation, e.g. training did not run in this process).
      stopped_early: training stopped before `max_steps` (a callback stopped it); the
        task then does not wait for its peers.
      reason: why it stopped early, for the log ("" otherwise).
      skipped: training was already over (`max_steps` reached by an earlier run).
    """

    step: int | None = None
    checkpoint: str | None = None
    final_step: int | None = None
    stopped_early: bool = False
    reason: str = ""
    skipped: bool = False


# trainexec's own lines for the evaluation after saves (a KerasTrainer's; an Estimator
# logs tf.estimator's).
ON_SAVE_WORDING = OnSaveWording(
    stopped_before_eval="Stopping training: ContinuousEvalListener.before_eval asked to",
    stopped_after_eval="Stopping training: ContinuousEvalListener.after_eval asked to",
    throttled="Not evaluating step %s: less than throttle_secs (%ss) since the last "
              "evaluation",
    not_evaluated="Evaluating {path} found {status}",
    evaluated="Evaluated %s (step %s): %s")


@dataclasses.dataclass(frozen=True)
class TrainerWords:
    """A trainer's words for the log.

    `on_save`: the lines of evaluation after saves (an Estimator's are tf.estimator's);
    `local_start`: the line a local run logs before it trains, or None.
    """

    on_save: OnSaveWording = ON_SAVE_WORDING
    local_start: str | None = None


@dataclasses.dataclass(frozen=True)
class BeforeTraining:
    """How a task that joins a training others lead starts (an Estimator worker).

    Attributes:
      start_delay_secs: the staggered start the sequence waits out, for a plan with
        `start_delay`.
      waiting_for_chief: entered around `train` for a plan with `waits_for_chief`: while
        entered, training waits for the chief to initialize the model.
    """

    start_delay_secs: float = 0.0
    waiting_for_chief: ContextManager[Any] = dataclasses.field(
        default_factory=contextlib.nullcontext)


class Evaluation(NamedTuple):
    """What evaluates the run's checkpoints (`TrainerHooks.evaluation`): the model that
    evaluates, and extra `ContinuousEvalListener`s of its evaluations (e.g. TensorBoard
    summaries)."""

    target: EvaluationTarget
    listeners: Sequence[Any] = ()


class TrainerHooks:
    """How one task of a trainer's job does each step of its role's sequence.

    Subclass it: every member but `model_dir`, `train` and `evaluation` has a default.

    Attributes:
      model_dir: the run's directory, shared by every task.
      words: its log lines (`TrainerWords`; default: trainexec's).
      run_evaluation: runs an evaluation after a save (`fn()`), e.g. on a thread of
        its own, outside the training strategy's scope (default: right here).
    """

    model_dir: str
    words: TrainerWords = TrainerWords()
    run_evaluation: Callable[[Callable[[], Any]], Any] = staticmethod(evaluate_here)

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Entered for the whole role, left whatever happens (e.g. announce a restart
        group before, stop watchdogs after). Default: nothing."""
        yield

    def start_server(self) -> Any:
        """Starts this task's standard TensorFlow server; returns it (default: the
        trainer has none: ConfigError)."""
        raise ConfigError(f"{type(self).__name__} starts no TensorFlow server")

    def before_training(self, plan: RolePlan) -> BeforeTraining:
        """For a plan with `start_delay` or `waits_for_chief`: how this task joins the
        training (its server started). Default: at once, without waiting."""
        del plan
        return BeforeTraining()

    def train(self, plan: RolePlan, on_save: EvaluateOnSave | None,
              record_finished: Callable[[], None]) -> Trained:
        """Trains to `max_steps`, handing each checkpoint save to `on_save` (when given:
        `on_save.after_save(step, path)`, False stops training). The sequence calls
        `on_save.finish` itself, with `Trained.final_step`. A task that must leave
        before training returns (a peer watchdog ending the process) first calls
        `record_finished`, the sequence's "task finished" record."""
        raise NotImplementedError(f"{type(self).__name__}.train")

    def after_records(self, plan: RolePlan, trained: Trained) -> None:
        """After the task recorded that it finished (e.g. wait for peers to leave).
        Default: nothing."""

    def evaluation(self) -> ContextManager[Evaluation]:
        """While entered, what evaluates checkpoints (`Evaluation`); its listeners are
        closed when the context exits, the target by the evaluator's sequence."""
        raise NotImplementedError(f"{type(self).__name__}.evaluation")

    def serving_job(self) -> ServingJob:
        """What a serving task serves, and until whom finishes (default: the trainer
        has no serving task: ConfigError)."""
        raise ConfigError(f"{type(self).__name__} has no serving task")


def same_model_dir(expected: Any, found: Any, what: str) -> str:
    """`expected` (the trainer's `model_dir`), checked against the `model_dir` that
    `what` ("the hooks", "the evaluation target", "the serving job") says it uses:
    one run has one directory, whichever object is asked. A ConfigError naming both
    when they differ (a trainer whose parts were built for different directories
    would write checkpoints where its evaluator never looks)."""
    if _comparable(expected) != _comparable(found):
        raise ConfigError(
            f"model_dir: the trainer's is {os.fspath(expected)!r} but the model_dir of "
            f"{what} is {os.fspath(found)!r}; build them from one model_dir (every task reads and "
            "writes the run's checkpoints and records there)")
    return os.fspath(expected)


def _comparable(model_dir: Any) -> str:
    path = os.fspath(model_dir)
    if "://" in path:
        return path.rstrip("/")
    return os.path.normpath(os.path.abspath(path))
