"""The saving hooks of a task that trains with MultiWorkerMirroredStrategy in a cluster.

Under MultiWorkerMirroredStrategy every training task runs every step together, and a
save may be a step of theirs too: reading a variable synchronized on read (a tf_keras
`BatchNormalization`'s moving mean, say) all-reduces it across the tasks. A save on the
chief alone would wait forever for the others. So, as tf.estimator had it, every task
runs the same saving hooks on the same steps: the chief's write to `model_dir`, every
other task's to a scratch directory of its own, `model_dir/tmp_<type>_<index>`
(`scratch_dir`), which nothing reads:

* a CheckpointSaverHook every `save_checkpoints_steps`. Time is not a step the tasks
  share (each would save at a different step), so `save_checkpoints_secs` becomes every
  `STEPS_INSTEAD_OF_SECS` (1000) steps, with tf.estimator's warning; the chief's hook
  takes the saving listeners (tf.estimator refused them under this strategy);
* the step rate (StepCounterHook) every `log_step_count_steps`, and the summaries
  (SummarySaverHook) every `save_summary_steps`.

The chief runs the model_fn's `training_chief_hooks` too. The order is tf.estimator's:
every task's hooks, the chief's, the step rate, the summaries, the checkpoints.

Example:
    ```python
    hooks = collective_hooks(config, model_dir, scaffold, worker_hooks,
                             spec.training_chief_hooks, listeners)
    ```
"""

from __future__ import annotations

import logging
import os
from typing import Any, Sequence

import tensorflow as tf

__all__ = ["STEPS_INSTEAD_OF_SECS", "collective_hooks", "scratch_dir"]

logger = logging.getLogger(__name__)

STEPS_INSTEAD_OF_SECS = 1000


def scratch_dir(model_dir: str, config: Any) -> str:
    """Where a task that is not the chief writes its saves: `model_dir/tmp_worker_1`."""
    return os.path.join(model_dir, f"tmp_{config.task_type}_{config.task_id}")


def _saving(config: Any) -> tuple[int | None, float | None]:
    steps, secs = config.save_checkpoints_steps, config.save_checkpoints_secs
    if secs:
        logger.warning("Collective ops may deadlock with `save_checkpoints_secs` please use "
                       "`save_checkpoint_steps` instead. Clearing `save_checkpoint_secs` and "
                       "setting `save_checkpoint_steps` to %d now.", STEPS_INSTEAD_OF_SECS)
        return STEPS_INSTEAD_OF_SECS, None
    return steps, None


def collective_hooks(config: Any, model_dir: str, scaffold: Any, worker_hooks: Sequence[Any],
                     chief_hooks: Sequence[Any], listeners: Sequence[Any]) -> list:
    """Every hook of this task (module doc); `worker_hooks` are every task's, `chief_hooks`
    the model_fn's `training_chief_hooks`, `listeners` the chief's saving listeners."""
    chief = config.is_chief
    if listeners and not chief:
        raise ValueError("saving_listeners are given to a task that does not save the "
                         "run's checkpoints: give them to the chief's Estimator.train only")
    where = model_dir if chief else scratch_dir(model_dir, config)
    hooks = [*worker_hooks, *(chief_hooks if chief else ())]
    if config.log_step_count_steps:
        hooks.append(tf.compat.v1.train.StepCounterHook(
            every_n_steps=config.log_step_count_steps, output_dir=where))
    if config.save_summary_steps:
        hooks.append(tf.compat.v1.train.SummarySaverHook(
            save_steps=config.save_summary_steps, output_dir=where, scaffold=scaffold))
    steps, secs = _saving(config)
    if steps:
        hooks.append(tf.compat.v1.train.CheckpointSaverHook(
            where, save_steps=steps, save_secs=secs, scaffold=scaffold,
            listeners=list(listeners), save_graph_def=config.checkpoint_save_graph_def))
    elif listeners:
        raise ValueError("There should be a CheckpointSaverHook to use saving_listeners: "
                         "they are given, but checkpoints are off (RunConfig "
                         "save_checkpoints_steps and save_checkpoints_secs are both None or "
                         "0): set save_checkpoints_steps")
    return hooks

