"""Training a Keras model to `max_steps` with `model.fit`, with checkpoints.

`train_to_max_steps` is what a training task of a `KerasTrainer` job runs
(local, a lone chief, every MultiWorkerMirroredStrategy task, the
ParameterServerStrategy chief):

0. skip everything, cluster included, when the newest checkpoint in `model_dir`
   is already at `max_steps` or beyond (tf.estimator's "Skipping training since
   max_steps has already saved"): a task restarted after the job finished (a
   pod whose process crashed on its way out) ends at once, instead of waiting
   for peers that have left;
1. build the model with `build_model()` inside the strategy's scope;
2. restore the newest checkpoint in `model_dir`, if any: a restarted task
   resumes at the optimizer step it saved last; a ParameterServerStrategy
   chief then waits (up to 5 s) until every worker reaches every ps
   (`trainexec.keras.faults.ps_links`: a worker's connection to a restarted ps may
   still be backing off);
3. run `model.fit` in epochs of `save_checkpoints_steps` steps (`segments`)
   (Keras 3 under MultiWorkerMirroredStrategy or ParameterServerStrategy, where
   Keras 3's `fit` cannot train: `trainexec.keras.fit.distributed_fit.DistributedFit`,
   which takes the same arguments and calls the same callbacks),
   saving `tf.train.CheckpointManager(tf.train.Checkpoint(model=model,
   optimizer=model.optimizer), ...)` checkpoints named by the optimizer step
   after each epoch, so that training takes exactly `max_steps` steps in total
   and a checkpoint is written every `save_checkpoints_steps` steps and at the
   end. An epoch that ran more optimizer steps than planned (under
   ParameterServerStrategy, a step run again after its worker died) ends the
   `fit` call, and the next one is planned from the step reached;
4. a ParameterServerStrategy chief then stops its coordinator's threads
   (`trainexec.keras.faults.coordinator_release`);
5. on SIGTERM, save after the current step and raise `Preempted` (a
   SystemExit with the contract's preempted code, 143; see
   `trainexec.keras.faults.preemption`).

Only the chief writes to `model_dir`. Under MultiWorkerMirroredStrategy every
worker must take part in each save, so the others write to a temporary
directory of their own, deleted when training returns.

Example:
    ```python
    steps = segments(start=30, max_steps=100, every=20)   # [(10, 1), (20, 3)]
    ```
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Callable, Iterator, Sequence

from trainexec.records import checkpoints
from trainexec.errors import ConfigError
from trainexec.keras.faults import scratch
from trainexec.keras.compat.optimizers import optimizer_built
from trainexec.keras.faults.coordinator_release import release_coordinator
from trainexec.keras.fit.distributed_fit import DistributedFit
from trainexec.keras.fit.input_data import (call_input_fn, checked_dataset, input_options,
                                             takes_argument)
from trainexec.keras.faults.preemption import preemption_saves
from trainexec.keras.faults.ps_links import touch_ps, wait_for_ps_links, worker_devices
from trainexec.keras.fit.restore_point import agreed_checkpoint
from trainexec.keras.strategy import (DEFAULT, MULTI_WORKER_MIRRORED, PARAMETER_SERVER,
                                      StrategyPlan, distribute_cluster, make_strategy)
from trainexec.tasks.hooks import Trained  # how training ended, for every trainer

__all__ = ["CHECKPOINT_NAME", "Trained", "segments", "train_to_max_steps"]

logger = logging.getLogger(__name__)

CHECKPOINT_NAME = "ckpt"  # checkpoints are <model_dir>/ckpt-<optimizer step>

# Called after each save with (checkpoint path, step); False stops training.
AfterSave = Callable[[str, int], bool]


def segments(start: int, max_steps: int, every: int) -> list[tuple[int, int]]:
    """The `model.fit` calls, as (steps_per_epoch, epochs), that train from step
    `start` to `max_steps` with a save at each multiple of `every` and at
    `max_steps` (pure). A start between two multiples first trains up to the
    next one, so a resumed run saves at the same steps as an uninterrupted one.
    """
    plan: list[tuple[int, int]] = []
    step = start
    if step % every and step < max_steps:
        first = min(every - step % every, max_steps - step)
        plan.append((first, 1))
        step += first
    full = max(max_steps - step, 0) // every
    if full:
        plan.append((every, full))
        step += full * every
    if step < max_steps:
        plan.append((max_steps - step, 1))
    return plan


def training_data(strategy: Any, plan: StrategyPlan, input_fn: Callable) -> Any:
    """What `model.fit` gets from the training `input_fn` under `plan`'s strategy.

    ParameterServerStrategy: a `DatasetCreator`, which builds the dataset on each
    worker (with its `InputContext` when `input_fn` takes one). Another
    distribution strategy and an `input_fn` that takes an `InputContext`: the
    datasets it returns per input pipeline (`distribute_datasets_from_function`;
    it shards and batches per replica itself). Otherwise the dataset itself, which
    `fit` splits among replicas and, across workers, shards.
    """
    import tensorflow as tf

    if plan.kind == PARAMETER_SERVER:
        def per_worker(context):
            return checked_dataset(call_input_fn(input_fn, context))
        return tf.keras.utils.experimental.DatasetCreator(per_worker)
    if plan.kind != DEFAULT and takes_argument(input_fn):
        return strategy.distribute_datasets_from_function(
            lambda context: checked_dataset(input_fn(context)), options=input_options())
    return checked_dataset(call_input_fn(input_fn))


def check_compiled(model: Any) -> None:
    import tensorflow as tf

    if not isinstance(model, tf.keras.Model):
        raise TypeError(f"build_model() returned {type(model).__name__}: it must return "
                        "a compiled tf.keras.Model")
    if getattr(model, "optimizer", None) is None:
        raise ConfigError("build_model() returned a model that is not compiled: call "
                          "model.compile(optimizer=..., loss=..., metrics=[...]) in "
                          "build_model before returning it")


def current_step(model: Any) -> int:
    return int(model.optimizer.iterations.numpy())


def _build_optimizer(model: Any) -> None:
    """Creates the optimizer's variables (slots), so a restore fills them at once."""
    optimizer = model.optimizer
    if not optimizer_built(optimizer) and callable(getattr(optimizer, "build", None)) and model.trainable_variables:
        optimizer.build(model.trainable_variables)


@contextlib.contextmanager
def _checkpoint_dir(model_dir: str, plan: StrategyPlan) -> Iterator[str]:
    """`model_dir` for the chief, else a temporary directory deleted afterwards."""
    if plan.is_chief:
        yield model_dir
        return
    name = plan.cluster.task_name.replace(":", "-")
    directory = scratch.make(f"trainexec-{name}-checkpoints-")
    logger.info("%s takes part in every save, writing to %s (deleted when training "
                "ends); the chief writes to %s", plan.cluster.task_name, directory, model_dir)
    try:
        yield directory
    finally:
        scratch.remove(directory)


class _Saver:
    """Saves the checkpoint named by the optimizer step, once per step."""

    def __init__(self, manager: Any, model: Any, is_chief: bool) -> None:
        self.manager = manager
        self.model = model
        self.is_chief = is_chief
        self.saved_step: int | None = None

    def save(self) -> tuple[str, int]:
        step = current_step(self.model)
        if step == self.saved_step:
            return self.manager.latest_checkpoint, step
        path = self.manager.save(checkpoint_number=step)
        self.saved_step = step
        if self.is_chief:
            logger.info("Saved checkpoint %s (step %s)", path, step)
        return path, step


def _save_callback(saver: _Saver, after_save: AfterSave | None) -> Any:
    import tensorflow as tf

    class SaveAfterEachEpoch(tf.keras.callbacks.Callback):
        """Saves after each epoch (`save_checkpoints_steps` steps); `after_save`
        may stop training."""

        stop_reason = ""

        def on_epoch_end(self, epoch, logs=None):
            path, step = saver.save()
            if after_save is not None and not after_save(path, step):
                self.stop_reason = f"stopped after the save at step {step}, as requested"
                self.model.stop_training = True

    return SaveAfterEachEpoch()


def build_in_scope(strategy: Any, build_model: Callable[[], Any]) -> Any:
    with strategy.scope():
        model = build_model()
        check_compiled(model)
        _build_optimizer(model)
    return model


def train_to_max_steps(plan: StrategyPlan, build_model: Callable[[], Any], model_dir: str,
                       input_fn: Callable, max_steps: int, save_every: int,
                       keep_checkpoint_max: int | None, callbacks: Sequence[Any] = (),
                       verbose: int | str = 0,
                       after_save: AfterSave | None = None) -> Trained:
    """Builds, restores and trains (see the module doc); returns how it ended.

    `after_save` runs on every task after each save; one returning False stops
    training after that save. Raises `Preempted` after a SIGTERM (once saved).
    """
    import tensorflow as tf

    newest = checkpoints.latest_checkpoint(model_dir)  # read once: skip, then restore
    done = _already_trained(newest, max_steps, plan)
    if done is not None:
        return done
    strategy = make_strategy(plan)
    logger.info("%s: %s replica(s) in sync", type(strategy).__name__,
                strategy.num_replicas_in_sync)
    model = build_in_scope(strategy, build_model)
    with strategy.scope():
        checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    if plan.kind == MULTI_WORKER_MIRRORED:  # in step: every task resumes from the same one
        newest = agreed_checkpoint(strategy, model_dir, newest, CHECKPOINT_NAME)
    start = _restore(checkpoint, model, model_dir, newest)
    _wait_for_ps_links(plan, model)
    with _checkpoint_dir(model_dir, plan) as directory:
        manager = tf.train.CheckpointManager(checkpoint, directory,
                                             max_to_keep=keep_checkpoint_max,
                                             checkpoint_name=CHECKPOINT_NAME)
        saver = _Saver(manager, model, plan.is_chief)
        saver.saved_step = start if start else None
        on_save = _save_callback(saver, after_save)
        try:
            with preemption_saves(plan, strategy, saver.save) as on_preemption:
                stopped = _fit(model, strategy, plan, input_fn, start, max_steps,
                               save_every, [*callbacks, on_save, on_preemption], verbose,
                               on_save)
            _, step = saver.save()  # a no-op unless training stopped between saves
        except SystemExit:  # Preempted, saved: Python exits normally, threads and all
            _release_coordinator(plan, strategy)
            raise
    _release_coordinator(plan, strategy)
    latest = checkpoints.latest_checkpoint(model_dir) if plan.is_chief else None
    return Trained(step, latest.path if latest else None, stopped_early=bool(stopped),
                   reason=stopped)


def _release_coordinator(plan: StrategyPlan, strategy: Any) -> None:
    """A ParameterServerStrategy chief's coordinator threads stopped, so that none
    aborts the exit (`trainexec.keras.faults.coordinator_release`); never raises."""
    if plan.kind != PARAMETER_SERVER or not plan.is_chief:
        return
    try:
        release_coordinator(strategy)
    except Exception as err:  # private TensorFlow attributes: never fail a done run
        logger.warning("Could not stop TensorFlow's coordinator threads: %r", err)


def _wait_for_ps_links(plan: StrategyPlan, model: Any) -> None:
    """A ParameterServerStrategy chief: every worker reaches every ps before the
    first step (`trainexec.keras.faults.ps_links`); never raises."""
    if plan.kind != PARAMETER_SERVER or not plan.is_chief:
        return
    try:
        iterations = getattr(model.optimizer, "iterations", None)  # a scalar: cheapest
        touch = touch_ps([*model.variables, *([] if iterations is None else [iterations])])
        if touch is None:
            logger.warning("No model variable is on a parameter server: not checking that "
                           "every worker reaches every ps")
            return
        wait_for_ps_links(worker_devices(distribute_cluster(plan.cluster)[0]), touch)
    except Exception as err:  # a check before training: never fail the run over it
        logger.warning("Could not check that every worker reaches every parameter "
                       "server: %r", err)


def _already_trained(latest: checkpoints.CheckpointInfo | None, max_steps: int,
                     plan: StrategyPlan) -> Trained | None:
    """A skipped run when the newest checkpoint's step (its name's number, the
    optimizer step) is at max_steps or beyond; else None."""
    if latest is None or latest.step is None or latest.step < max_steps:
        return None
    logger.info("Skipping training: the newest checkpoint %s is at step %s, max_steps %s "
                "has been reached (raise max_steps to train on)", latest.path, latest.step,
                max_steps)
    return Trained(latest.step, latest.path if plan.is_chief else None, skipped=True)


def _restore(checkpoint: Any, model: Any, model_dir: str,
             info: checkpoints.CheckpointInfo | None) -> int:
    """Restores `info` (the newest checkpoint in `model_dir`, None: there is none);
    the step training resumes at."""
    if info is None:
        logger.info("No checkpoint in %s: training starts at step 0", model_dir)
        return 0
    latest = info.path
    status = checkpoint.restore(latest)
    try:
        status.assert_existing_objects_matched()
    except AssertionError as err:
        raise ConfigError(
            f"The newest checkpoint in model_dir, {latest}, does not fit the model "
            f"build_model() returns ({str(err).splitlines()[0]}): give the job a new "
            "model_dir, or build the same model as the run that wrote it") from err
    step = current_step(model)
    logger.info("Restored %s: training resumes at step %s", latest, step)
    return step


def _fit(model: Any, strategy: Any, plan: StrategyPlan, input_fn: Callable, start: int,
         max_steps: int, save_every: int, callbacks: list, verbose: int | str,
         on_save: Any) -> str:
    """Runs `model.fit` calls, each planned by `segments` from the step actually
    reached, until max_steps; returns why it stopped early, or ""."""
    if not segments(start, max_steps, save_every):
        logger.info("Nothing to train: step %s has reached max_steps %s", start, max_steps)
        return ""
    fit = _fit_function(model, strategy, plan, input_fn)
    realign = _realign_callback(save_every, plan.kind == PARAMETER_SERVER)
    epoch = 0
    while True:
        before = current_step(model)
        plan_steps = segments(before, max_steps, save_every)
        if not plan_steps:
            break
        logger.info("Training from step %s to max_steps %s with %s: %s", before, max_steps,
                    "trainexec's loop" if plan.own_loop else "model.fit",
                    " + ".join(f"{e} epoch(s) of {s} steps" for s, e in plan_steps))
        steps_per_epoch, epochs = plan_steps[0]
        realign.expect(before, steps_per_epoch)
        fit(steps_per_epoch=steps_per_epoch, epochs=epoch + epochs, initial_epoch=epoch,
            callbacks=[*callbacks, realign], verbose=verbose)
        epoch += realign.epochs_ended or epochs
        if on_save.stop_reason:
            return on_save.stop_reason
        if realign.overshot:
            continue  # planned again from the step reached
        step = current_step(model)
        if step - before < steps_per_epoch * epochs:
            return (f"stopped at step {step}, before max_steps {max_steps}: "
                    "train_spec.input_fn ran out of data (repeat the dataset: "
                    "dataset.repeat()), or a callback set model.stop_training")
    step = current_step(model)
    if step != max_steps:
        logger.warning("Training ended at optimizer step %s, not max_steps %s: %s", step,
                       max_steps, realign.why_more_steps())
    return ""


def _fit_function(model: Any, strategy: Any, plan: StrategyPlan, input_fn: Callable
                  ) -> Callable[..., Any]:
    """`model.fit` on the training data, or, for Keras 3 under MultiWorkerMirroredStrategy
    or ParameterServerStrategy, `DistributedFit.fit` (same arguments, same callbacks)."""
    if plan.own_loop:
        loop = DistributedFit(model, strategy, plan, input_fn)
        logger.info("Keras 3 under %s: training with trainexec's loop (strategy.run of "
                    "%s.train_step, %s step(s) per call), as Keras 3's model.fit cannot",
                    loop.strategy_name, type(model).__name__, loop.steps_per_call)
        return loop.fit
    data = training_data(strategy, plan, input_fn)

    def fit(**arguments: Any) -> Any:
        return model.fit(data, **arguments)

    return fit


def _realign_callback(save_every: int, parameter_server: bool) -> Any:
    """A callback that ends `fit` after an epoch that ran more optimizer steps than
    planned, so that the next `fit` call re-aligns the saves to multiples of
    `save_every` and training still ends at max_steps.

    Under ParameterServerStrategy this is expected after a worker dies: TensorFlow
    runs the step it was running again on another worker (at-least-once), and if
    the first run had already updated the variables, the optimizer counts it twice.
    """
    import tensorflow as tf

    cause = ("ParameterServerStrategy ran again the step of a worker that died mid-step "
             "(at-least-once) after it had updated the variables" if parameter_server
             else "the model's train_step applied the optimizer more than once in a step")

    class RealignSaves(tf.keras.callbacks.Callback):
        def expect(self, step: int, steps_per_epoch: int) -> None:
            self.start, self.steps_per_epoch = step, steps_per_epoch
            self.epochs_ended, self.overshot = 0, False

        def why_more_steps(self) -> str:
            return f"in the last save interval, {cause}"

        def on_epoch_end(self, epoch, logs=None):
            self.epochs_ended += 1
            planned = self.start + self.epochs_ended * self.steps_per_epoch
            step = current_step(self.model)
            if step > planned:
                self.overshot = True
                self.model.stop_training = True
                logger.warning("Step %s at the end of an epoch planned to end at step %s: "
                               "%s. Saves re-align to multiples of %s.", step, planned,
                               cause, save_every)

    return RealignSaves()
