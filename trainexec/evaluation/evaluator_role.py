"""The evaluator task of every trainer: evaluate new checkpoints until the run's
last one, holding the evaluation's lease and exporting the final model once.

Its evaluation state directory is `<model_dir>/trainexec/eval`
(`eval_<EvalSpec.name>` for a named evaluation). It holds the lease there
(`trainexec.evaluation.lease`): a second evaluator of the same evaluation is refused,
naming the one running. Each exporter's final export is recorded there
(`trainexec.evaluation.final_export`), so a restarted evaluator never exports the final
model twice; one restarted after the final export of a run whose latest
checkpoint reached `max_steps` stops at once, returning the recorded metrics
and export results.

Example:
    ```python
    metrics, exports = evaluate_until_done(target, eval_spec, max_steps=1000,
                                           task_name="evaluator:0", clock=SystemClock(),
                                           poll_secs=1.0, idle_timeout_secs=None,
                                           listener=ContinuousEvalListener())
    ```
"""

from __future__ import annotations

import logging

from trainexec.records.checkpoints import CheckpointInfo, checkpoint_step
from trainexec.clock import Clock
from trainexec.evaluation.listeners import ContinuousEvalListener, ListenerList
from trainexec.evaluation.loop import ContinuousEvaluation
from trainexec.evaluation.policy import LoopPolicy
from trainexec.evaluation.target import EvaluationTarget
from trainexec.evaluation.one_pass import Evaluator
from trainexec.evaluation.final_export import (FinalExportRecord, FinalExportSettler, FinalOnce,
                                               estimator_state_dir)
from trainexec.evaluation.lease import EvaluatorLease, LeaseGuard
from trainexec.evaluation.status_report import EvaluationStatus
from trainexec.specs import EvalSpec
from trainexec.records.storage import storage_of

__all__ = ["evaluate_until_done"]

logger = logging.getLogger(__name__)


def evaluate_until_done(target: EvaluationTarget, eval_spec: EvalSpec, max_steps: int | None,
                        *, task_name: str, clock: Clock, poll_secs: float,
                        idle_timeout_secs: float | None,
                        listener: ContinuousEvalListener) -> tuple[dict | None, list]:
    """The evaluator task of any trainer: holds the lease, evaluates `target`'s
    checkpoints until the run's last one, exports the final model once.

    Returns `(metrics, export_results)` of the last evaluation.
    """
    state_dir = estimator_state_dir(target.model_dir, eval_spec.name)
    what = (f"the evaluator task ({task_name}) of {target.model_dir}"
            + (f", evaluation {eval_spec.name!r}" if eval_spec.name else ""))
    status = EvaluationStatus.from_env(task_name, target.model_dir, clock)  # for the launcher
    if status is not None:
        listener = ListenerList([listener, status])
    with EvaluatorLease(state_dir, what) as lease:
        metrics, exports = _evaluate(target, eval_spec, max_steps, FinalExportRecord(state_dir),
                                     lease, clock, poll_secs, idle_timeout_secs, listener)
    if status is not None:
        status.report_final(metrics, exports)
    return metrics, exports


def _evaluate(target: EvaluationTarget, eval_spec: EvalSpec, max_steps: int | None,
              record: FinalExportRecord, lease: EvaluatorLease, clock: Clock,
              poll_secs: float, idle_timeout_secs: float | None,
              listener: ContinuousEvalListener) -> tuple[dict | None, list]:
    names = [exporter.name for exporter in eval_spec.exporters]
    latest = target.latest_checkpoint()
    done = record.done_for(latest, names)
    if done is not None and _reached(latest, max_steps):
        logger.info("Nothing left to evaluate: %s (step >= max_steps %s) was evaluated and "
                    "exported as final before a restart (%s)", latest, max_steps,
                    record.path)
        return dict(done.metrics), done.export_results(names)
    evaluator = Evaluator(target, [FinalOnce(e, record) for e in eval_spec.exporters],
                          max_steps, clock)
    policy = LoopPolicy.for_storage(
        storage_of(target.model_dir),
        start_delay_secs=eval_spec.start_delay_secs,
        throttle_secs=eval_spec.throttle_secs, poll_secs=poll_secs,
        max_training_steps=max_steps, idle_timeout_secs=idle_timeout_secs)
    settler = FinalExportSettler(evaluator, record, names)
    # Evaluated and exported before a restart (training may have no max_steps):
    # not again; the loop still waits to be sure the run is over. (`done` is the
    # record of `latest`: there is a latest checkpoint when there is one.)
    resumed = CheckpointInfo.from_path(latest) if done is not None and latest else None
    loop = ContinuousEvaluation(
        evaluator, target, policy, ListenerList([LeaseGuard(lease), listener]),
        clock, already_evaluated=resumed, settler=settler)
    result = loop.run()
    logger.info("Evaluator stops after %s evaluation(s): %s", loop.evaluations,
                loop.stop_reason)
    if result is None and done is not None and loop.last_evaluated == resumed:
        return dict(done.metrics), done.export_results(names)
    return (dict(result.metrics) if result else None), loop.last_export_results


def _reached(checkpoint: str | None, max_steps: int | None) -> bool:
    step = checkpoint_step(checkpoint) if checkpoint else None
    return max_steps is not None and step is not None and step >= max_steps
