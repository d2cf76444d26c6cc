"""A parameter server: serves variables until every training task has finished.

TensorFlow's ps serves forever (`server.join()`), so something else must kill
it. trainexec's ps instead exits once the chief (or master) and every worker
have recorded that their training returned (see `trainexec.finished_tasks`);
it checks every `poll_secs`. With `ps_serves_forever=True` it joins the server
as TensorFlow's does.
"""

import logging
import time

from trainexec.finished_tasks import finished_since
from trainexec.tasks.context import TaskContext

__all__ = ["run"]

logger = logging.getLogger(__name__)


def run(ctx: TaskContext) -> None:
    server = ctx.start_server()
    if ctx.ps_serves_forever:
        server.join()
        return
    started = time.time()
    model_dir = ctx.estimator.model_dir
    expected = set(ctx.cluster.training_tasks)
    logger.info("Serving until %s record that training finished in %s",
                ", ".join(sorted(expected)), model_dir)
    while True:
        missing = expected - finished_since(model_dir, started)
        if not missing:
            logger.info("Every training task has finished: %s stops serving",
                        ctx.cluster.task_name)
            return
        ctx.clock.sleep(ctx.poll_secs)
