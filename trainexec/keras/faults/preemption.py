"""Preemption of a Keras training task: on SIGTERM, save a checkpoint, then exit 143.

A cluster manager that preempts a task sends it SIGTERM and kills it a grace
period later. A training task of a `KerasTrainer` job then saves a checkpoint
(`ckpt-<step>` in model_dir, written by the chief) after the step it is in and
raises `Preempted`, a `SystemExit` with the exit-code contract's `preempted`
code (143 unless `TRAINEXEC_EXIT_CODES` says otherwise; see
`trainexec.contract.exit_codes`): unless the user's script catches it, the process
exits 143, "preempted, saved: restart me" (retryable under TFJob's `ExitCode`
policy), and the restarted run resumes at that step. TensorFlow's own handler
would exit 42, which TFJob reads as permanent.

* **MultiWorkerMirroredStrategy:** saving is collective (every worker takes
  part), yet the SIGTERM reaches one task. TensorFlow's
  `tf.distribute.experimental.PreemptionCheckpointHandler` solves exactly this:
  the task that got the signal publishes, through the strategy's coordination
  service, the step after its current one; every worker acknowledges, saves at
  that step, and exits. It is used here with `save_fn` (trainexec's own save,
  `ckpt-<optimizer step>` in model_dir) and `exit_fn` (raise `Preempted`); its
  own step counter and checkpoint directory are a throwaway, so that every
  worker counts from 0 after any restart. It works alike on TF 2.15 and current
  TF (the module is the same). Caveats: it installs its own SIGTERM handler
  (the previous one is put back when training ends); it asks the GCE metadata
  server whether it runs on Google Cloud (a 5 s timeout at most, once), and on a
  Google Cloud CPU VM it does not save at all.
* **One writer (a local run, a lone chief, the ParameterServerStrategy chief):**
  nothing to agree on, and TensorFlow's handler refuses ParameterServerStrategy,
  so a SIGTERM handler sets `model.stop_training`: `fit` ends its epoch after
  the step in progress (ParameterServerStrategy allows no batch-level
  callbacks, but `fit` checks the flag after every step, and trainexec's loop
  for Keras 3 after each call it schedules); at the epoch's end the
  task waits for the steps dispatched to PSS workers (`ClusterCoordinator.join`),
  saves, and raises `Preempted`.

Keras's `BackupAndRestore(save_before_preemption=True)` wraps the same handler,
but saves its own backup (epoch and batch, deleted when `fit` ends) rather than
the `ckpt-<step>` checkpoints the evaluator and a restart read, does not
survive trainexec's `fit` segments, and has no ParameterServerStrategy support;
it is not used.

Example:
    ```python
    with preemption_saves(plan, strategy, saver.save) as callback:
        model.fit(..., callbacks=[..., callback])   # may raise Preempted
    ```
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from typing import Any, Callable, Iterator

from trainexec.keras.faults import scratch
from trainexec.keras.compat.preemption import non_blocking_handler_class
from trainexec.keras.strategy import MULTI_WORKER_MIRRORED, PARAMETER_SERVER, StrategyPlan
from trainexec.contract.exit_codes import PREEMPTED, ExitCodes
from trainexec.contract.exit_deadline import end_within
from trainexec.env_settings import seconds_setting
from trainexec.errors import ConfigError
from trainexec.contract.termination import note_termination_requested, termination_requested

__all__ = ["Preempted", "preemption_saves"]

logger = logging.getLogger(__name__)

# Saves a checkpoint at the current step; returns (path, step).
Save = Callable[[], "tuple[str | None, int]"]


class Preempted(SystemExit):
    """Training saved a checkpoint after a SIGTERM and stops; the process exits with
    the contract's `preempted` code (143 by default).

    Attributes: `step` (the step saved), `checkpoint` (its path on the chief,
    else None).
    """

    def __init__(self, step: int, checkpoint: str | None) -> None:
        super().__init__(ExitCodes.from_env().code_for(PREEMPTED))
        self.step = step
        self.checkpoint = checkpoint

    def __str__(self) -> str:
        if self.step < 0:
            return f"preempted before a save; exiting {self.code} for a restart"
        where = f" ({self.checkpoint})" if self.checkpoint else ""
        return (f"preempted: saved step {self.step}{where}; exiting "
                f"{self.code} for a restart")


def _preempted(path: str | None, step: int, is_chief: bool) -> Preempted:
    logger.warning("Preempted (SIGTERM): saved %s at step %s; exiting %s so that the "
                   "launcher restarts the job from this save",
                   path if is_chief else "this task's part of the checkpoint", step,
                   ExitCodes.from_env().code_for(PREEMPTED))
    return Preempted(step, path if is_chief else None)


def _step_callback(after_step: Callable[[], None]) -> Any:
    import tensorflow as tf

    class SaveOnPreemption(tf.keras.callbacks.Callback):
        """After each step and epoch: save and stop if preempted."""

        def on_train_batch_end(self, batch, logs=None):
            after_step()

        def on_epoch_end(self, epoch, logs=None):
            after_step()

    return SaveOnPreemption()


def _epoch_callback(received: threading.Event, after_stop: Callable[[], None]) -> Any:
    import tensorflow as tf

    class StopAndSaveOnPreemption(tf.keras.callbacks.Callback):
        """`fit` stops after the step in progress (`stop_training`, set by the
        signal handler); the epoch's end then saves and raises. Epoch-level
        only: ParameterServerStrategy refuses batch-level callbacks."""

        def on_train_begin(self, logs=None):
            if received.is_set():  # signalled between two `fit` calls
                self.model.stop_training = True

        def on_epoch_end(self, epoch, logs=None):
            if received.is_set():
                after_stop()

        def on_train_end(self, logs=None):
            # A SIGTERM after the last epoch's check still stopped `fit` early:
            # save and raise here, or the run would look finished at that step.
            if received.is_set():
                after_stop()

    return StopAndSaveOnPreemption()


@contextlib.contextmanager
def preemption_saves(plan: StrategyPlan, strategy: Any, save: Save) -> Iterator[Any]:
    """A Keras callback that saves and raises `Preempted` after a SIGTERM.

    The SIGTERM handler is in place inside the `with` block only (the previous
    one is restored after). Off the main thread, where Python handles no
    signals, the callback does nothing (and says so).
    """
    if threading.current_thread() is not threading.main_thread():
        logger.warning("Training runs off the main thread, where Python cannot handle "
                       "signals: a SIGTERM ends this task without a save (call "
                       "train_and_evaluate from the main thread to save on preemption)")
        yield _step_callback(lambda: None)
        return
    previous = signal.getsignal(signal.SIGTERM)
    try:
        if plan.kind == MULTI_WORKER_MIRRORED:
            with _collective(plan, strategy, save) as callback:
                yield callback
        else:
            yield _single_writer(plan, strategy, save)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _single_writer(plan: StrategyPlan, strategy: Any, save: Save) -> Any:
    received = threading.Event()

    def after_stop() -> None:
        if plan.kind == PARAMETER_SERVER:  # the steps dispatched to workers first
            import tensorflow as tf

            tf.distribute.coordinator.ClusterCoordinator(strategy).join()
        path, step = save()
        raise _preempted(path, step, plan.is_chief)

    callback = _epoch_callback(received, after_stop)

    def on_sigterm(signum, frame):
        _bound_the_save()
        if not received.is_set():
            logger.warning("SIGTERM: saving a checkpoint after the current step, then "
                           "exiting %s", ExitCodes.from_env().code_for(PREEMPTED))
        received.set()
        model = getattr(callback, "model", None)
        if model is not None:
            model.stop_training = True

    signal.signal(signal.SIGTERM, on_sigterm)
    return callback


# How long a task may take, once it got SIGTERM, to save and exit: Kubernetes' default
# terminationGracePeriodSeconds, after which the pod is killed anyway. Set it to the
# platform's grace (Slurm's, say) with TRAINEXEC_SAVE_GRACE_SECS; 0: no bound.
SAVE_GRACE_VAR = "TRAINEXEC_SAVE_GRACE_SECS"
SAVE_GRACE_SECS = 30.0


def _bound_the_save() -> None:
    """On the first SIGTERM: notes it (`trainexec.contract.termination`) and bounds what
    follows. TensorFlow's collective save waits, with no timeout, for every worker's
    acknowledgement through the coordination service: with the chief cut off and then
    restarted, worker:0 of chaos regression seed 3 waited there for ever, and its
    restarted peers waited for it. `TRAINEXEC_SAVE_GRACE_SECS` (default 30) later the
    task ends with the preempted code (143), as the pod's kill would, so the group
    restarts."""
    if termination_requested():
        return
    note_termination_requested()
    try:
        grace = seconds_setting(SAVE_GRACE_VAR, SAVE_GRACE_SECS, "how long a task may "
                                "take to save and exit after SIGTERM; 0: no bound")
    except ConfigError as error:  # in a signal handler: say it, keep the default
        logger.warning("%s", error)
        grace = SAVE_GRACE_SECS
    end_within(grace, ExitCodes.from_env().code_for(PREEMPTED), "this task",
               since="SIGTERM (saving before a preemption)", backstop=True)


def _note_sigterm_before(handler: Any) -> None:
    """Puts a SIGTERM handler in front of TensorFlow's (`handler`) that notes the signal
    (`trainexec.contract.termination`) first, and ends the task as preempted when
    TensorFlow's cannot tell the cluster: it calls the coordination service from the
    signal handler, and a cut-off chief makes that call fail (a RuntimeError through
    pybind11), which would otherwise end the task as the user's error."""

    def on_sigterm(signum: int, frame: Any) -> None:
        _bound_the_save()
        if not callable(handler):
            return
        try:
            handler(signum, frame)
        except Exception as error:  # noqa: BLE001 - any failure to tell the cluster
            logger.warning("SIGTERM: the cluster could not be told to save (%s: %s); "
                           "exiting %s without a save, a restart resumes from the last "
                           "checkpoint", type(error).__name__, str(error).splitlines()[0]
                           if str(error) else "", ExitCodes.from_env().code_for(PREEMPTED))
            raise Preempted(-1, None) from error

    signal.signal(signal.SIGTERM, on_sigterm)


@contextlib.contextmanager
def _collective(plan: StrategyPlan, strategy: Any, save: Save) -> Iterator[Any]:
    import tensorflow as tf

    saved: dict[str, Any] = {}

    def save_fn() -> None:
        saved["path"], saved["step"] = save()

    def exit_fn() -> None:
        raise _preempted(saved.get("path"), saved.get("step", -1), plan.is_chief)

    # The handler's own counter lives in a throwaway checkpoint in a directory of
    # our own (its non-chief temp directory goes beside it, in the same place).
    counter_dir = scratch.make("trainexec-preemption-")
    try:
        handler = non_blocking_handler_class()(
            strategy.cluster_resolver, tf.train.Checkpoint(),
            checkpoint_dir=f"{counter_dir}/counter",
            termination_config=tf.distribute.experimental.TerminationConfig(
                exit_fn=exit_fn, save_fn=save_fn, grace_period=0))
        logger.info("On SIGTERM, every MultiWorkerMirroredStrategy task saves after the "
                    "same step, then exits %s (tf.distribute PreemptionCheckpointHandler)",
                    ExitCodes.from_env().code_for(PREEMPTED))
        _note_sigterm_before(signal.getsignal(signal.SIGTERM))
        yield _step_callback(handler.save_checkpoint_if_preempted)
        handler.stop_watching()
    finally:
        scratch.remove(counter_dir)
