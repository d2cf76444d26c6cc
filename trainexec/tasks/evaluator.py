"""The evaluator: evaluates new checkpoints until the run's last one is done."""

from __future__ import annotations

from trainexec.continuous import ContinuousEvaluation, LoopPolicy
from trainexec.evaluation import Evaluator
from trainexec.tasks.context import TaskContext

__all__ = ["run"]


def run(ctx: TaskContext) -> tuple[dict | None, list]:
    eval_spec = ctx.require_eval_spec()
    target = ctx.eval_target()
    evaluator = Evaluator(target, eval_spec.exporters, ctx.train_spec.max_steps, ctx.clock)
    policy = LoopPolicy(
        start_delay_secs=eval_spec.start_delay_secs,
        throttle_secs=eval_spec.throttle_secs, poll_secs=ctx.poll_secs,
        max_training_steps=ctx.train_spec.max_steps,
        idle_timeout_secs=ctx.idle_timeout_secs)
    loop = ContinuousEvaluation(evaluator, target, policy, ctx.listener, ctx.clock)
    result = loop.run()
    return (result.metrics if result else None), loop.last_export_results
