"""A parameter server of an Estimator job: serves variables until training is over.

TensorFlow's ps serves forever (`server.join()`); trainexec's exits 0 instead
(`trainexec.tasks.serving`), checking every `poll_secs`, once

* the chief (or master) and every worker have recorded that their training
  returned since this ps started (see `trainexec.records.finished_tasks`); or
* the chief's completion record shows training is over
  (`trainexec.records.run_state`), and the tasks that have not recorded finishing had
  `DRAIN_SECS` more (a worker may be finishing its last step; one that crashed
  and was not restarted no longer keeps the ps serving). The record counts
  when it was written since this ps started (this run's: a new run's chief
  clears an earlier one before training), or, whatever its age, when it and
  the latest checkpoint have reached the run's `max_steps`: every training
  task of this run would then skip training, so a ps restarted after the end
  stops at once (a finished record of any age counts there).

What keeps it serving, as TensorFlow's would: training still going on, and a
ps restarted after the end of a run without `max_steps` (an older record could
be an earlier run's, not yet cleared by this run's chief). With
`ps_serves_forever=True` it joins the server as TensorFlow's does.
"""

from __future__ import annotations

import logging

from trainexec.records.checkpoints import latest_checkpoint
from trainexec.estimator.roles.context import TaskContext
from trainexec.tasks.serving import ServingJob, serve_until_training_over

__all__ = ["DRAIN_SECS", "run"]

logger = logging.getLogger(__name__)

DRAIN_SECS = 30.0


def run(ctx: TaskContext) -> None:
    if ctx.ps_serves_forever:
        ctx.start_server().join()
        return
    model_dir = ctx.estimator.model_dir

    def latest_step() -> int | None:
        latest = latest_checkpoint(model_dir)
        return latest.step if latest else None

    serve_until_training_over(
        ServingJob(task=ctx.cluster.task_name, model_dir=model_dir,
                   waited_for=frozenset(ctx.cluster.training_tasks),
                   max_steps=ctx.train_spec.max_steps, drain_secs=DRAIN_SECS),
        start_server=ctx.start_server, latest_step=latest_step, poll_secs=ctx.poll_secs,
        clock=ctx.clock)
