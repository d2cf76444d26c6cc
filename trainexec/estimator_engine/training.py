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

Hooks run in tf.estimator's order: on the chief, the checkpoint saver and the model_fn's
`training_chief_hooks` (never run elsewhere), the summaries and step rate, then every
task's hooks (the input's, the caller's, the stop, the NaN check, the loss log, the
model_fn's `training_hooks`), so a caller's hook sees a NaN step before the NaN check
stops training. In a cluster with a master and workers, worker 0 writes the summaries
instead of the master. A task whose own server is not listening fails at once
instead of waiting forever for its session.

Example:
    ```python
    loss = run_training(estimator, input_fn, hooks=[], steps=None, max_steps=1000,
                        saving_listeners=[])
    ```
"""

from __future__ import annotations

import contextlib
import logging
import socket
from typing import Any, Callable, Iterator, Sequence

import tensorflow as tf

from trainexec.cluster.config import MASTER, WORKER
from trainexec.estimator_engine.collective_hooks import collective_hooks
from trainexec.estimator_engine.compat.loss_scaling import estimator_loss_scaling
from trainexec.estimator_engine.graph import build_graph, saver_for
from trainexec.estimator_engine.model_spec import ModeKeys
from trainexec.estimator_engine.one_session import OneSession
from trainexec.estimator_engine.replicated_graph import build_replicated
from trainexec.estimator_engine.strategy_checks import MULTI_WORKER_MIRRORED, strategy_kind
from trainexec.estimator_engine.strategy_setup import for_task, in_cluster, session_config_for
from trainexec.records import checkpoints

__all__ = ["ChiefSessionCreator", "WorkerSessionCreator", "check_hooks",
           "check_server_listening", "check_steps", "check_train_arguments", "run_training"]

logger = logging.getLogger(__name__)


def check_steps(field: str, value: Any, verb: str) -> None:
    """ValueError unless `value` is None or an integer > 0 (tf.estimator's words)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"Must specify {field} > 0, given: {value!r} (Estimator.{verb}: "
                         f"`{field}` is a whole number of steps, or None)")


def check_hooks(hooks: Any, verb: str) -> list:
    """`hooks` as a list; TypeError naming the first that is not a SessionRunHook."""
    hooks = list(hooks or ())
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"Hooks must be a SessionRunHook, given: {hook!r} (Estimator."
                            f"{verb}: give tf.compat.v1.train.SessionRunHook instances, e.g. "
                            "trainexec.estimator.LoggingTensorHook)")
    return hooks


def check_train_arguments(hooks: Any, steps: Any, max_steps: Any,
                          saving_listeners: Any) -> tuple[list, list]:
    """The hooks and listeners, checked; ValueError/TypeError naming a bad argument."""
    if steps is not None and max_steps is not None:
        raise ValueError(f"Estimator.train: give `steps` ({steps}) or `max_steps` "
                         f"({max_steps}), not both")
    check_steps("steps", steps, "train")
    check_steps("max_steps", max_steps, "train")
    hooks = check_hooks(hooks, "train")
    listeners = list(saving_listeners or ())
    for listener in listeners:
        if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
            raise TypeError("saving_listeners must be a list of CheckpointSaverListener, "
                            f"given: {listener!r} (Estimator.train: subclass "
                            "trainexec.estimator.CheckpointSaverListener)")
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
        raise ValueError("There should be a CheckpointSaverHook to use saving_listeners: "
                         "they are given, but checkpoints are off (RunConfig "
                         "save_checkpoints_steps and save_checkpoints_secs are both None or "
                         "0): set one of them")
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


def _summaries_on_worker_0(config: Any) -> bool:
    """A cluster with a master and workers: the master evaluates too, so worker 0
    writes the training summaries and step rate instead (as tf.estimator did)."""
    jobs = config.cluster_spec.jobs if config.cluster_spec else []
    return MASTER in jobs and WORKER in jobs


def check_server_listening(master: str) -> None:
    """RuntimeError when nothing listens at `master`, this task's own server: a session
    there would wait forever. Only a refused connection counts (a slow or cut network
    is TensorFlow's to wait out)."""
    if not master.startswith("grpc://"):
        return
    host, _, port = master[len("grpc://"):].rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except ConnectionRefusedError:
        raise RuntimeError(
            f"Estimator.train: nothing listens at this task's address {master}, so a session "
            "there would wait forever: start the task's tf.distribute.Server first "
            "(trainexec.estimator.train_and_evaluate and `trainexec launch` do), or unset "
            "TF_CONFIG to train in this process") from None
    except (OSError, ValueError):
        pass


def _worker_hooks(built: Any, hooks: Sequence[Any], steps: int | None,
                  max_steps: int | None, config: Any) -> list:
    """Every task's hooks, in tf.estimator's order: the input's, the caller's, the stop
    at `steps` / `max_steps`, the NaN check, the loss log, the model_fn's."""
    spec = built.spec
    worker_hooks = [*built.input_hooks, *hooks]
    if steps is not None or max_steps is not None:
        worker_hooks.append(tf.compat.v1.train.StopAtStepHook(num_steps=steps,
                                                              last_step=max_steps))
    worker_hooks.append(tf.compat.v1.train.NanTensorHook(spec.loss))
    if config.log_step_count_steps:
        worker_hooks.append(tf.compat.v1.train.LoggingTensorHook(
            {"loss": spec.loss, "step": built.global_step},
            every_n_iter=config.log_step_count_steps))
    return [*worker_hooks, *spec.training_hooks]


@contextlib.contextmanager
def _within(strategy: Any) -> Iterator[None]:
    """The strategy's scope, with tf.estimator's loss scaling (nothing without one)."""
    if strategy is None:
        yield
        return
    with strategy.scope(), estimator_loss_scaling(strategy):
        yield


def run_training(estimator: Any, input_fn: Callable, hooks: Sequence[Any],
                 steps: int | None, max_steps: int | None,
                 saving_listeners: Sequence[Any]) -> Any:
    """Trains `estimator` (module doc); returns the loss of the last step run (None if
    no step ran)."""
    config = estimator.config
    strategy = (for_task(config.train_distribute, config)
                if config.train_distribute is not None else None)
    with tf.Graph().as_default(), _within(strategy):
        if strategy is None:
            built = build_graph(estimator.model_fn, estimator.params, config,
                                ModeKeys.TRAIN, input_fn=input_fn)
        else:
            built = build_replicated(estimator.model_fn, estimator.params, config,
                                     ModeKeys.TRAIN, input_fn, strategy)
        spec = built.spec
        if config.is_chief and estimator.latest_checkpoint() is None:
            estimator.warm_start_if_asked()
        summaries = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
        if not any(summary.op.name == "loss" for summary in summaries):
            tf.compat.v1.summary.scalar("loss", spec.loss)
        tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.LOSSES, spec.loss)
        scaffold = saver_for(spec.scaffold, config)
        worker_hooks = _worker_hooks(built, hooks, steps, max_steps, config)
        on_worker_0 = _summaries_on_worker_0(config)
        if on_worker_0 and config.task_type == WORKER and config.task_id == 0:
            worker_hooks += _summary_hooks(estimator, scaffold)
        check_server_listening(config.master)
        session_config = (config.session_config if strategy is None
                          else session_config_for(strategy, config.session_config))
        if strategy is not None and strategy_kind(strategy) == MULTI_WORKER_MIRRORED \
                and in_cluster(config):
            # Every task initializes (or restores) its own copy and saves in step.
            all_hooks = collective_hooks(config, estimator.model_dir, scaffold, worker_hooks,
                                         spec.training_chief_hooks, list(saving_listeners))
            creator: Any = OneSession(
                ChiefSessionCreator(scaffold, config.master, session_config,
                                    estimator.model_dir, distributed=False),
                f"{config.task_type}:{config.task_id}")
        elif config.is_chief:
            # In tf.estimator's order: the chief's own hooks first (so the final checkpoint
            # is saved before a user hook's end() runs), the summaries, every task's.
            user_hooks = [*worker_hooks, *spec.training_chief_hooks]
            all_hooks = [*_checkpoint_hooks(estimator, scaffold, list(saving_listeners),
                                            user_hooks),
                         *spec.training_chief_hooks,
                         *([] if on_worker_0 else _summary_hooks(estimator, scaffold)),
                         *worker_hooks]
            creator = ChiefSessionCreator(
                scaffold, config.master, session_config, estimator.model_dir,
                distributed=bool(config.master) and config.num_ps_replicas > 0)
        else:
            all_hooks = worker_hooks
            creator = WorkerSessionCreator(
                scaffold, config.master, session_config,
                max_wait_secs=config.session_creation_timeout_secs,
                recovery_wait_secs=estimator.readiness_secs)
        loss = None
        recording = (creator.recording() if isinstance(creator, OneSession)
                     else contextlib.nullcontext())
        with recording, tf.compat.v1.train.MonitoredSession(session_creator=creator,
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
