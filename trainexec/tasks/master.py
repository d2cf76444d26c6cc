"""The master (TF 1.x chief): trains and evaluates after each checkpoint save."""

from trainexec.continuous import ContinuousEvalListener
from trainexec.evaluation import Evaluator
from trainexec.tasks.context import TaskContext
from trainexec.tasks.evaluate_on_save import EvaluateOnSaveListener
from trainexec.tasks.training import (record_completion, run_distributed_training,
                                      start_fresh_run)

__all__ = ["run"]


def run(ctx: TaskContext) -> None:
    eval_spec = ctx.require_eval_spec()
    # Finality is decided by the end of training, not by max_steps: with
    # asynchronous workers the last save can land past max_steps.
    evaluator = Evaluator(ctx.eval_target(), eval_spec.exporters, None, ctx.clock)
    on_save = EvaluateOnSaveListener(evaluator, eval_spec.throttle_secs,
                                     ContinuousEvalListener(), ctx.clock,
                                     ctx.train_spec.max_steps)
    start_fresh_run(ctx)
    run_distributed_training(ctx, ctx.train_spec.saving_listeners + (on_save,))
    record_completion(ctx)
