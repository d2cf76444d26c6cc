"""`TrainerHooks`: what a trainer supplies to the role sequences of `trainexec.tasks`.

The sequences (which step comes first, which record is written when) are written once,
in `trainexec.tasks.training`, `.serving_role` and `.evaluating`; a trainer only says how
each step is done for its kind of model. Two trainers ship with trainexec:
`trainexec.estimator.hooks.EstimatorHooks` and `trainexec.keras.hooks.KerasHooks`.

A trainer makes its hooks for one task (`trainer.task_hooks(plan, settings)`), checking
there what its model cannot do (a Keras job refuses Estimator hooks, say), so that a bad
setting fails before anything starts.

Example (the fake trainer of the role table test):
    ```python
    class Hooks:
        words = TrainerWords(on_save=OnSaveWording(...))
        run_evaluation = staticmethod(lambda evaluate: evaluate())

        def begin(self): ...
        def start_server(self): return server
        def start_delay_secs(self): return 0.0
        def waiting_for_chief(self): return contextlib.nullcontext()
        def train(self, plan, on_save, record_finished): return Trained(step=20)
        def after_records(self, plan, trained): ...
        def eval_target(self): return target
        def evaluation_listeners(self): return contextlib.nullcontext(())
        def serving_job(self): return ServingJob(...)
        def close(self): ...
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ContextManager, Protocol, Sequence, runtime_checkable

from trainexec.evaluation.evaluate_on_save import EvaluateOnSave, OnSaveWording
from trainexec.evaluation.target import EvaluationTarget
from trainexec.tasks.serving import ServingJob
from trainexec.trainer import RolePlan

__all__ = ["Trained", "TrainerHooks", "TrainerWords"]


@dataclasses.dataclass(frozen=True)
class Trained:
    """What a training task's `train` hook reports when training returned.

    Attributes:
      step: the step training reached (None: unknown, e.g. no checkpoint).
      checkpoint: the checkpoint it ended on (None if there is none).
      final_step: the step whose checkpoint gets the final evaluation after saves
        (None: no final evaluation, e.g. training did not run in this process).
      stopped_early: training stopped before `max_steps` (a callback stopped it); the
        task then does not wait for its peers.
      skipped: training was already over (`max_steps` reached by an earlier run).
    """

    step: int | None = None
    checkpoint: str | None = None
    final_step: int | None = None
    stopped_early: bool = False
    skipped: bool = False


@dataclasses.dataclass(frozen=True)
class TrainerWords:
    """A trainer's words for the log.

    `on_save`: the lines of evaluation after saves (an Estimator's are tf.estimator's);
    `local_start`: the line a local run logs before it trains, or None.
    """

    on_save: OnSaveWording
    local_start: str | None = None


@runtime_checkable
class TrainerHooks(Protocol):
    """How one task of a trainer's job does each step of its role's sequence.

    Attributes:
      model_dir: the run's directory, shared by every task.
      words: its log lines (`TrainerWords`).
      run_evaluation: runs an evaluation after a save (`fn()`), e.g. on a thread of
        its own, outside the training strategy's scope.
    """

    model_dir: str
    words: TrainerWords
    run_evaluation: Callable[[Callable[[], Any]], Any]

    def begin(self) -> None:
        """Before the role's first step (e.g. announce a restart group)."""

    def start_server(self) -> Any:
        """Starts this task's standard TensorFlow server; returns it."""

    def start_delay_secs(self) -> float:
        """How long this worker waits before it trains (a staggered start)."""

    def waiting_for_chief(self) -> ContextManager[Any]:
        """While entered, training waits for the chief to initialize the model."""

    def train(self, plan: RolePlan, on_save: EvaluateOnSave | None,
              record_finished: Callable[[], None]) -> Trained:
        """Trains to `max_steps`, handing each checkpoint save to `on_save` (when given:
        `on_save.after_save(step, path)`, False stops training). The sequence calls
        `on_save.finish` itself, with `Trained.final_step`. A task that must leave
        before training returns (a peer watchdog ending the process) first calls
        `record_finished`, the sequence's "task finished" record."""

    def after_records(self, plan: RolePlan, trained: Trained) -> None:
        """After the task recorded that it finished (e.g. wait for peers to leave)."""

    def eval_target(self) -> EvaluationTarget:
        """The model that evaluates checkpoints."""

    def evaluation_listeners(self) -> ContextManager[Sequence[Any]]:
        """Extra `ContinuousEvalListener`s of an evaluation (e.g. TensorBoard
        summaries), closed when the context exits."""

    def serving_job(self) -> ServingJob:
        """What a serving task serves, and until whom finishes."""

    def close(self) -> None:
        """After the role, whatever happened (stop watchdogs, close files)."""
