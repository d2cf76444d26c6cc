"""The Estimator's evaluator task: `trainexec.evaluation.evaluator_role` on an `EstimatorTarget`,
whose persistent evaluation session it closes at the end."""

from __future__ import annotations

from trainexec.evaluation.evaluator_role import evaluate_until_done
from trainexec.estimator.roles.context import TaskContext

__all__ = ["run"]


def run(ctx: TaskContext) -> tuple[dict | None, list]:
    target = ctx.eval_target()
    try:
        return evaluate_until_done(
            target, ctx.require_eval_spec(), ctx.train_spec.max_steps,
            task_name=ctx.cluster.task_name, clock=ctx.clock, poll_secs=ctx.poll_secs,
            idle_timeout_secs=ctx.idle_timeout_secs, listener=ctx.listener)
    finally:
        target.close()  # the persistent evaluation's session
