"""The evaluator: evaluates new checkpoints until the run's last one is done.

Its evaluation state directory is `<model_dir>/trainexec/eval`
(`eval_<EvalSpec.name>` for a named evaluation). It holds the lease there
(`trainexec.lease`): a second evaluator of the same evaluation is refused,
naming the one running. Each exporter's final export is recorded there
(`trainexec.final_export`), so a restarted evaluator never exports the final
model twice; one restarted after the final export of a run whose latest
checkpoint reached `max_steps` stops at once, returning the recorded metrics
and export results.
"""

from __future__ import annotations

import logging

from trainexec.checkpoints import CheckpointInfo, checkpoint_step
from trainexec.continuous import ContinuousEvaluation, ListenerList, LoopPolicy
from trainexec.evaluation import Evaluator
from trainexec.final_export import (FinalExportListener, FinalExportRecord, FinalOnce,
                                    estimator_state_dir)
from trainexec.lease import EvaluatorLease, LeaseGuard
from trainexec.tasks.context import TaskContext

__all__ = ["run"]

logger = logging.getLogger(__name__)


def run(ctx: TaskContext) -> tuple[dict | None, list]:
    eval_spec = ctx.require_eval_spec()
    target = ctx.eval_target()
    state_dir = estimator_state_dir(target.model_dir, eval_spec.name)
    what = (f"the evaluator task ({ctx.cluster.task_name}) of {target.model_dir}"
            + (f", evaluation {eval_spec.name!r}" if eval_spec.name else ""))
    try:
        with EvaluatorLease(state_dir, what) as lease:
            return _evaluate(ctx, target, FinalExportRecord(state_dir), lease)
    finally:
        target.close()  # the persistent evaluation's session


def _evaluate(ctx: TaskContext, target, record: FinalExportRecord,
              lease: EvaluatorLease) -> tuple[dict | None, list]:
    eval_spec = ctx.require_eval_spec()
    names = [exporter.name for exporter in eval_spec.exporters]
    max_steps = ctx.train_spec.max_steps
    latest = target.latest_checkpoint()
    done = record.done_for(latest, names)
    if done is not None and _reached(latest, max_steps):
        logger.info("Nothing left to evaluate: %s (step >= max_steps %s) was evaluated and "
                    "exported as final before a restart (%s)", latest, max_steps,
                    record.path)
        return dict(done.metrics), done.export_results(names)
    evaluator = Evaluator(target, [FinalOnce(e, record) for e in eval_spec.exporters],
                          max_steps, ctx.clock)
    policy = LoopPolicy(
        start_delay_secs=eval_spec.start_delay_secs,
        throttle_secs=eval_spec.throttle_secs, poll_secs=ctx.poll_secs,
        max_training_steps=max_steps,
        idle_timeout_secs=ctx.idle_timeout_secs)
    recorder = FinalExportListener(evaluator, record, names)
    # Evaluated and exported before a restart (training may have no max_steps):
    # not again; the loop still waits to be sure the run is over.
    resumed = CheckpointInfo.from_path(latest) if done is not None else None
    loop = ContinuousEvaluation(
        evaluator, target, policy, ListenerList([LeaseGuard(lease), recorder, ctx.listener]),
        ctx.clock, already_evaluated=resumed)
    result = loop.run()
    recorder.settle()
    if result is None and done is not None and loop.last_evaluated == resumed:
        return dict(done.metrics), done.export_results(names)
    return (result.metrics if result else None), loop.last_export_results


def _reached(checkpoint: str | None, max_steps: int | None) -> bool:
    step = checkpoint_step(checkpoint) if checkpoint else None
    return max_steps is not None and step is not None and step >= max_steps
