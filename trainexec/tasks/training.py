"""The training roles (TRAIN, TRAIN_AND_EVALUATE): chief, worker, master, a local run.

One sequence for every trainer; the `RolePlan`'s flags say which steps a task takes, the
trainer's hooks (`trainexec.tasks.hooks.TrainerHooks`) how each is done:

1. `writes_checkpoints`: clear an earlier run's completion record ("completion cleared"),
   so that no evaluator or ps reads it as this run's;
2. `starts_server`: start the task's TensorFlow server (before any delay, so that its
   peers can connect);
3. `start_delay`: wait out the worker's staggered start delay (the hooks'
   `before_training`);
4. `waits_for_chief`: train once the chief has initialized the model (ditto);
5. train, handing each checkpoint save to the evaluation after saves (TRAIN_AND_EVALUATE);
6. TRAIN_AND_EVALUATE: the final evaluation and export of the last checkpoint;
7. `writes_checkpoints`: record that training is complete, at its last checkpoint
   (evaluators then finish);
8. unless `is_local`: record that this task's training finished ("task finished": a ps
   and the task's peers wait for it);
9. the trainer's last step (`after_records`: a MultiWorkerMirroredStrategy task waits for
   its peers to finish, so that they leave together).

A local run returns a `TrainResult` of its last evaluation; the other roles return None
(`trainexec.tasks.result`).
"""

from __future__ import annotations

import contextlib
import logging
from trainexec.evaluation.evaluate_on_save import EvaluateOnSave
from trainexec.evaluation.listeners import ListenerList
from trainexec.records.completion import (clear_training_complete, read_training_complete,
                                          record_training_complete)
from trainexec.records.finished_tasks import record_task_finished
from trainexec.tasks.hooks import BeforeTraining, Evaluation, Trained, TrainerHooks
from trainexec.tasks.plan import TRAIN, TRAIN_AND_EVALUATE, JobSettings, RolePlan
from trainexec.tasks.result import TrainResult, train_result

__all__ = ["run_training"]

logger = logging.getLogger(__name__)


def run_training(plan: RolePlan, hooks: TrainerHooks,
                 settings: JobSettings) -> TrainResult | None:
    """Carries out a TRAIN or TRAIN_AND_EVALUATE `plan` (see the module doc)."""
    if plan.action not in (TRAIN, TRAIN_AND_EVALUATE):
        raise ValueError(f"{plan.describe()}: not a training role")
    evaluates = plan.action == TRAIN_AND_EVALUATE
    if evaluates:
        settings.eval_spec_for(plan.task)  # ConfigError before anything starts
    with (hooks.evaluation() if evaluates else contextlib.nullcontext()) as evaluation:
        on_save = (_evaluate_on_save(plan, hooks, settings, evaluation)
                   if evaluation is not None else None)
        if on_save is not None and plan.is_local and hooks.words.local_start:
            logger.info(hooks.words.local_start)
        trained = _train(plan, hooks, settings, on_save)
        if on_save is not None and trained.final_step is not None:
            on_save.finish(trained.final_step, trained.checkpoint)
    _record(plan, hooks.model_dir, settings, trained)
    hooks.after_records(plan, trained)
    if not plan.is_local or on_save is None:
        return None  # a cluster role, or a local task whose plan only trains
    result = on_save.eval_result
    return train_result(result.metrics if result else None, on_save.export_results)


def _evaluate_on_save(plan: RolePlan, hooks: TrainerHooks, settings: JobSettings,
                      evaluation: Evaluation) -> EvaluateOnSave:
    """The evaluation after this task's saves: the job's listener follows a local run; a
    master's evaluations go to its log and exporters only, as in tf.estimator."""
    eval_spec = settings.eval_spec_for(plan.task)
    listener = ListenerList([settings.listener if plan.is_local else None,
                             *evaluation.listeners])
    return EvaluateOnSave(evaluation.target, eval_spec, settings.train_spec.max_steps,
                          listener, settings.clock, hooks.words.on_save,
                          run_evaluation=hooks.run_evaluation)


def _train(plan: RolePlan, hooks: TrainerHooks, settings: JobSettings,
           on_save: EvaluateOnSave | None) -> Trained:
    """Steps 1 to 5 of the module doc."""
    if plan.writes_checkpoints:
        clear_training_complete(hooks.model_dir)
    # A tf.distribute.Server cannot be stopped: its port stays bound until the process
    # exits, whatever happens to this reference.
    server = hooks.start_server() if plan.starts_server else None
    joining = (hooks.before_training(plan) if plan.start_delay or plan.waits_for_chief
               else BeforeTraining())
    if plan.start_delay:
        delay = joining.start_delay_secs
        if delay > 0 and _training_over(hooks.model_dir, settings):
            logger.info("Training is already complete: no staggered start (%.0f secs).",
                        delay)
        elif delay > 0:
            logger.info("Waiting %.0f secs before starting training.", delay)
            settings.clock.sleep(delay)
    task, model_dir = settings.cluster.task_name, hooks.model_dir
    with joining.waiting_for_chief if plan.waits_for_chief else contextlib.nullcontext():
        trained = hooks.train(plan, on_save,
                              lambda: record_task_finished(model_dir, task))
    del server
    return trained


def _training_over(model_dir: str, settings: JobSettings) -> bool:
    """Whether the run's completion record says training is over (a task restarted after
    the job finished): it has nothing to wait for."""
    complete = read_training_complete(model_dir)
    max_steps = settings.train_spec.max_steps
    return complete is not None and (max_steps is None or (
        complete.global_step is not None and complete.global_step >= max_steps))


def _record(plan: RolePlan, model_dir: str, settings: JobSettings, trained: Trained) -> None:
    """Steps 7 and 8: completion first (an evaluator finishes on it), then this task's
    "finished" (a ps that sees every training task finished stops serving)."""
    if plan.writes_checkpoints:
        record_training_complete(model_dir, trained.checkpoint, trained.step,
                                 settings.train_spec.max_steps)
    if not plan.is_local:
        record_task_finished(model_dir, settings.cluster.task_name)
