"""A parameter server: serves variables until every training task has finished.

TensorFlow's ps serves forever (`server.join()`), so something else must kill
it. trainexec's ps instead exits once the chief (or master) and every worker
have recorded that their training returned (see `trainexec.finished_tasks`),
checking every `poll_secs`. With `ps_serves_forever=True` it joins the server
as TensorFlow's does.
"""

import logging

from trainexec.finished_tasks import FinishedTasks
from trainexec.tasks.context import TaskContext

__all__ = ["run"]

logger = logging.getLogger(__name__)

STILL_WAITING_LOG_SECS = 300


def run(ctx: TaskContext) -> None:
    if ctx.ps_serves_forever:
        ctx.start_server().join()
        return
    model_dir = ctx.estimator.model_dir
    # Marked before the server starts, so a trainer that needs it finishes later.
    watch = FinishedTasks.starting_now(model_dir, ctx.cluster.task_name)
    server = ctx.start_server()  # held while serving
    expected = set(ctx.cluster.training_tasks)
    logger.info("Serving until %s record that training finished in %s",
                ", ".join(sorted(expected)), watch.directory)
    next_log = ctx.clock.now() + STILL_WAITING_LOG_SECS
    while missing := expected - watch.finished():
        if ctx.clock.now() >= next_log:
            next_log = ctx.clock.now() + STILL_WAITING_LOG_SECS
            logger.info("Still serving: %s have not recorded that training finished",
                        ", ".join(sorted(missing)))
        ctx.clock.sleep(ctx.poll_secs)
    logger.info("Every training task has finished: %s stops serving", ctx.cluster.task_name)
    del server
