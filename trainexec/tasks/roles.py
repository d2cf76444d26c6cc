"""`run_role`: carries out a task's `RolePlan` with its trainer's hooks, by the plan's action.

* TRAIN, TRAIN_AND_EVALUATE: `trainexec.tasks.training.run_training`;
* SERVE (`run_serving`): start the server, serve until training is over
  (`trainexec.tasks.serving`), then, for a task that trains in other shapes (a
  ParameterServerStrategy worker), record that it finished, as training tasks do; with
  `ps_serves_forever`, serve until killed, as TensorFlow's servers do;
* EVALUATE (`run_evaluating`): the continuous evaluation of the run's checkpoints
  (`trainexec.evaluation.evaluator_role`) until its last one, with the job's listener and
  the trainer's (its summaries); the evaluation target is closed at the end.

Every role runs inside the hooks' `session`, left whatever happens.
"""

from __future__ import annotations

import logging

from trainexec.evaluation.evaluator_role import evaluate_until_done
from trainexec.evaluation.listeners import ListenerList
from trainexec.records.checkpoints import latest_checkpoint
from trainexec.records.finished_tasks import record_task_finished
from trainexec.tasks.hooks import TrainerHooks, same_model_dir
from trainexec.tasks.plan import EVALUATE, SERVE, JobSettings, RolePlan
from trainexec.tasks.result import TrainResult, train_result
from trainexec.tasks.serving import serve_until_training_over
from trainexec.tasks.training import run_training

__all__ = ["run_evaluating", "run_role", "run_serving"]

logger = logging.getLogger(__name__)


def run_role(plan: RolePlan, hooks: TrainerHooks,
             settings: JobSettings) -> TrainResult | None:
    """Carries out `plan` (see the module doc); returns its role's `TrainResult`, or None
    (`trainexec.tasks.result`)."""
    with hooks.session():
        if plan.action == SERVE:
            run_serving(plan, hooks, settings)
            return None
        if plan.action == EVALUATE:
            return run_evaluating(plan, hooks, settings)
        return run_training(plan, hooks, settings)


def run_serving(plan: RolePlan, hooks: TrainerHooks, settings: JobSettings) -> None:
    """A SERVE plan (see the module doc)."""
    if settings.ps_serves_forever:
        hooks.start_server().join()
        return None
    model_dir = hooks.model_dir

    def latest_step() -> int | None:
        latest = latest_checkpoint(model_dir)
        return latest.step if latest else None

    job = hooks.serving_job()
    same_model_dir(model_dir, job.model_dir, "the serving job")
    serve_until_training_over(job, start_server=hooks.start_server,
                              latest_step=latest_step, poll_secs=settings.poll_secs,
                              clock=settings.clock)
    if plan.task in settings.cluster.training_tasks:
        record_task_finished(model_dir, plan.task)
    return None


def run_evaluating(plan: RolePlan, hooks: TrainerHooks,
                   settings: JobSettings) -> TrainResult | None:
    """An EVALUATE plan: the `TrainResult` of the run's last checkpoint."""
    eval_spec = settings.eval_spec_for(plan.task)
    with hooks.evaluation() as evaluation:
        target = evaluation.target
        same_model_dir(hooks.model_dir, target.model_dir, "the evaluation target")
        try:
            return train_result(*evaluate_until_done(
                target, eval_spec, settings.train_spec.max_steps,
                task_name=settings.cluster.task_name, clock=settings.clock,
                poll_secs=settings.poll_secs, idle_timeout_secs=settings.idle_timeout_secs,
                listener=ListenerList([settings.listener, *evaluation.listeners])))
        finally:
            # EvaluationTarget.close (e.g. an Estimator's persistent evaluation session);
            # a target written before the protocol declared it may lack it.
            close = getattr(target, "close", None)
            if close is not None:
                close()
