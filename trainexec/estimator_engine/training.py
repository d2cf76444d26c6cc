"""`Estimator.train`: the training loop of one task (chief or worker, between-graph).

In a new graph: the input and the `model_fn` in TRAIN mode on this task's devices,
then a `tf.compat.v1.train.MonitoredSession` that runs `train_op` until a hook asks
to stop (`StopAtStepHook` for `steps` / `max_steps`, or the input running out).
The chief creates the session from the newest checkpoint in `model_dir` (or
initializes, after a warm start) unless the ps hold the model at a later step (a chief
restarted while the workers trained on: `ChiefSessionCreator` carries on from the
cluster's state, where tf.estimator rolls it back), and saves checkpoints (`CheckpointSaverHook`
with the saving listeners), summaries and the step rate as the RunConfig says; a
worker waits until the chief has initialized the model, re-checking every
`readiness_secs` (TensorFlow's SessionManager, public, takes the interval).

Example:
    ```python
    loss = run_training(estimator, input_fn, hooks=[], steps=None, max_steps=1000,
                        saving_listeners=[])
    ```
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import tensorflow as tf

from trainexec.estimator_engine.graph import build_graph, saver_for
from trainexec.records import checkpoints
from trainexec.estimator_engine.model_spec import ModeKeys

__all__ = ["ChiefSessionCreator", "WorkerSessionCreator", "check_train_arguments",
           "run_training"]

logger = logging.getLogger(__name__)


def _check_positive(field: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"Estimator.train: `{field}` must be an integer > 0 or None, "
                         f"given: {value!r}")


def check_train_arguments(hooks: Any, steps: Any, max_steps: Any,
                          saving_listeners: Any) -> tuple[list, list]:
    """The hooks and listeners, checked; ValueError/TypeError naming a bad argument."""
    if steps is not None and max_steps is not None:
        raise ValueError(f"Estimator.train: give `steps` ({steps}) or `max_steps` "
                         f"({max_steps}), not both")
    _check_positive("steps", steps)
    _check_positive("max_steps", max_steps)
    hooks = list(hooks or ())
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"Estimator.train: hooks must be SessionRunHook instances, "
                            f"given: {hook!r}")
    listeners = list(saving_listeners or ())
    for listener in listeners:
        if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
            raise TypeError("Estimator.train: saving_listeners must be "
                            f"CheckpointSaverListener instances, given: {listener!r}")
    return hooks, listeners


class WorkerSessionCreator(tf.compat.v1.train.SessionCreator):
    """A non-chief's session: waits until the chief has initialized (or restored) the
    model, re-checking every `recovery_wait_secs`, then runs the local init."""

    def __init__(self, scaffold: Any, master: str, config: Any, max_wait_secs: float,
                 recovery_wait_secs: float) -> None:
        self._scaffold, self._master, self._config = scaffold, master, config
        self._max_wait_secs, self._recovery_wait_secs = max_wait_secs, recovery_wait_secs

    def create_session(self) -> Any:
        self._scaffold.finalize()
        manager = tf.compat.v1.train.SessionManager(
            local_init_op=self._scaffold.local_init_op,
            local_init_feed_dict=self._scaffold.local_init_feed_dict,
            ready_op=self._scaffold.ready_op,
            ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
            graph=tf.compat.v1.get_default_graph(),
            recovery_wait_secs=self._recovery_wait_secs)
        return manager.wait_for_session(self._master, config=self._config,
                                        max_wait_secs=self._max_wait_secs)


class ChiefSessionCreator(tf.compat.v1.train.SessionCreator):
    """The chief's session: as tf.estimator's (initialize the model, or restore the
    latest checkpoint), except where the cluster has moved past that checkpoint.

    A chief restarted in a cluster whose ps kept serving finds the model's variables
    there, initialized and at a later global step than its latest checkpoint: the
    workers trained on while the chief was gone (or finished the run). Restoring the
    checkpoint would write the old values over theirs and roll the global step back
    (tf.estimator does; the chief then re-trained alone what the workers had done). So
    the chief first looks, once and without waiting, whether the model is ready on the
    ps; if it is at or past the checkpoint's step, it carries on from there (its
    CheckpointSaverHook saves that state at once); else it restores as before.
    """

    def __init__(self, scaffold: Any, master: str, config: Any, checkpoint_dir: str,
                 distributed: bool) -> None:
        self._scaffold, self._master, self._config = scaffold, master, config
        self._checkpoint_dir, self._distributed = checkpoint_dir, distributed
        self.resumed_from_cluster_step: int | None = None

    def create_session(self) -> Any:
        self._scaffold.finalize()
        # Found once, read whole (TensorFlow's own lookup can misread a state file
        # on gs://), and handed over by name.
        latest = checkpoints.latest_checkpoint(self._checkpoint_dir)
        checkpoint = latest.path if latest is not None else None
        if self._distributed and checkpoint is not None:
            session = self._cluster_state_past(_checkpoint_step(checkpoint))
            if session is not None:
                return session
        return tf.compat.v1.train.ChiefSessionCreator(
            scaffold=self._scaffold, master=self._master, config=self._config,
            checkpoint_filename_with_path=checkpoint).create_session()

    def _cluster_state_past(self, checkpoint_step: int | None) -> Any:
        """A session on the cluster's own state if it is at or past `checkpoint_step`
        (None: not ready, or behind: restore as usual)."""
        if checkpoint_step is None:
            return None
        manager = tf.compat.v1.train.SessionManager(
            local_init_op=self._scaffold.local_init_op,
            local_init_feed_dict=self._scaffold.local_init_feed_dict,
            ready_op=self._scaffold.ready_op,
            ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
            graph=tf.compat.v1.get_default_graph())
        try:  # one look (max_wait_secs=0): a ps that restarted has nothing to offer
            session = manager.wait_for_session(self._master, config=self._config,
                                               max_wait_secs=0)
        except tf.errors.DeadlineExceededError:
            return None
        step = int(session.run(tf.compat.v1.train.get_global_step()))
        if step < checkpoint_step:
            session.close()
            return None
        logger.warning("The cluster's variables are at step %s, past the latest checkpoint "
                       "(step %s): the chief carries on from them rather than restoring the "
                       "checkpoint over the workers' training", step, checkpoint_step)
        self.resumed_from_cluster_step = step
        return session


def _checkpoint_step(path: str) -> int | None:
    """The step in a checkpoint's name (`model.ckpt-1200` → 1200), or None."""
    _, _, step = path.rpartition("-")
    return int(step) if step.isdigit() else None


def _has_saver_hook(hooks: Sequence[Any]) -> bool:
    return any(isinstance(hook, tf.compat.v1.train.CheckpointSaverHook) for hook in hooks)


def _checkpoint_hooks(estimator: Any, scaffold: Any, listeners: list,
                      user_hooks: Sequence[Any]) -> list:
    """The chief's CheckpointSaverHook (with the saving listeners), unless the user
    gave one of their own."""
    config = estimator.config
    if _has_saver_hook(user_hooks):
        if listeners:
            raise ValueError(
                "Estimator.train: saving_listeners are given, and the hooks already hold a "
                "CheckpointSaverHook of your own: give the listeners to that hook "
                "(CheckpointSaverHook(..., listeners=...)), or leave checkpoint saving to "
                "the Estimator (RunConfig save_checkpoints_steps / _secs)")
        return []
    save_steps, save_secs = config.save_checkpoints_steps, config.save_checkpoints_secs
    if save_steps or save_secs:
        return [tf.compat.v1.train.CheckpointSaverHook(
            estimator.model_dir, save_secs=save_secs, save_steps=save_steps,
            scaffold=scaffold, listeners=listeners,
            save_graph_def=config.checkpoint_save_graph_def)]
    if listeners:
        raise ValueError("Estimator.train: saving_listeners are given, but checkpoints are "
                         "off (RunConfig save_checkpoints_steps and save_checkpoints_secs "
                         "are both None or 0): set one of them")
    return []


def _summary_hooks(estimator: Any, scaffold: Any) -> list:
    config = estimator.config
    hooks: list = []
    if config.log_step_count_steps:
        hooks.append(tf.compat.v1.train.StepCounterHook(
            every_n_steps=config.log_step_count_steps, output_dir=estimator.model_dir))
    if config.save_summary_steps:
        hooks.append(tf.compat.v1.train.SummarySaverHook(
            save_steps=config.save_summary_steps, output_dir=estimator.model_dir,
            scaffold=scaffold))
    return hooks


def run_training(estimator: Any, input_fn: Callable, hooks: Sequence[Any],
                 steps: int | None, max_steps: int | None,
                 saving_listeners: Sequence[Any]) -> Any:
    """Trains `estimator` (module doc); returns the loss of the last step run (None if
    no step ran)."""
    config = estimator.config
    with tf.Graph().as_default():
        built = build_graph(estimator.model_fn, estimator.params, config, ModeKeys.TRAIN,
                            input_fn=input_fn)
        spec = built.spec
        summaries = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
        if not any(summary.op.name == "loss" for summary in summaries):
            tf.compat.v1.summary.scalar("loss", spec.loss)
        if config.is_chief and estimator.latest_checkpoint() is None:
            estimator.warm_start_if_asked()
        scaffold = saver_for(spec.scaffold, config)
        # In tf.estimator's order: the chief's own hooks first (so the final checkpoint is
        # saved before a user hook's end() runs), then every task's.
        worker_hooks = [*built.input_hooks, *hooks]
        if steps is not None or max_steps is not None:
            worker_hooks.append(tf.compat.v1.train.StopAtStepHook(num_steps=steps,
                                                                  last_step=max_steps))
        worker_hooks.append(tf.compat.v1.train.NanTensorHook(spec.loss))
        if config.log_step_count_steps:
            worker_hooks.append(tf.compat.v1.train.LoggingTensorHook(
                {"loss": spec.loss, "step": built.global_step},
                every_n_iter=config.log_step_count_steps))
        worker_hooks += spec.training_hooks
        if config.is_chief:
            user_hooks = [*worker_hooks, *spec.training_chief_hooks]
            all_hooks = [*_checkpoint_hooks(estimator, scaffold, list(saving_listeners),
                                            user_hooks),
                         *spec.training_chief_hooks, *worker_hooks,
                         *_summary_hooks(estimator, scaffold)]
            creator = ChiefSessionCreator(
                scaffold, config.master, config.session_config, estimator.model_dir,
                distributed=bool(config.master) and config.num_ps_replicas > 0)
        else:
            all_hooks = worker_hooks
            creator = WorkerSessionCreator(
                scaffold, config.master, config.session_config,
                max_wait_secs=config.session_creation_timeout_secs,
                recovery_wait_secs=estimator.readiness_secs)
        loss = None
        with tf.compat.v1.train.MonitoredSession(session_creator=creator,
                                                 hooks=all_hooks) as session:
            resumed = getattr(creator, "resumed_from_cluster_step", None)
            if max_steps is not None and resumed is not None and resumed >= max_steps:
                logger.info("The cluster finished training (step %s, max_steps %s) while "
                            "the chief was away: nothing left to train", resumed, max_steps)
            else:
                while not session.should_stop():
                    _, loss = session.run([spec.train_op, spec.loss])
        logger.info("Loss for final step: %s.", loss)
        return loss
