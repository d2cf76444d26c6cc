"""Training a Keras 3 model under MultiWorkerMirroredStrategy or ParameterServerStrategy.

Keras 3's `model.fit` cannot train under either strategy (keras-team/keras#20585:
it builds the model from a `PerReplica` batch and fails; keras-team/keras#18624:
no ParameterServerStrategy at all), yet the strategies themselves train Keras 3
models. `DistributedFit` is trainexec's loop for those clusters. Its `fit` takes
`model.fit`'s arguments that `trainexec.keras.fit.training` uses (`steps_per_epoch`,
`epochs`, `initial_epoch`, `callbacks`, `verbose`) and keeps `fit`'s contract
with callbacks, so the checkpoint, preemption and re-alignment callbacks of a
`KerasTrainer` job, and a user's own, run unchanged:

* the step is the model's own `train_step` (Keras's, with the compiled loss,
  the model's regularization losses, the compiled metrics and the optimizer with
  its learning-rate schedule and loss scaling; or the model's override), run in
  a replica context by `strategy.run`;
* before the first step, in the strategy's scope and cross-replica context, the
  compiled loss and metrics are built from the dataset's element spec (what
  `fit` fails to do), and the step function is traced (under PSS, as the
  coordinator would trace it for a worker): an overridden `train_step` that
  fails then (one that uses cross-replica calls, for instance) stops the job
  before any step with a ConfigError naming the likely cause and the fix, its
  error chained;
* several steps run per `tf.function` call (`steps_per_call`: the model's
  compiled `steps_per_execution`, else `DEFAULT_STEPS_PER_CALL`), as `fit` does
  with `steps_per_execution`: batch-level callbacks see the call's last batch;
* MultiWorkerMirroredStrategy: every task runs the same calls on
  `experimental_distribute_dataset` (an `input_fn` returning global batches) or
  `distribute_datasets_from_function` (an `input_fn` taking an `InputContext`);
  the logs are the replicas' metrics averaged across all workers, as `fit`
  reports them;
* ParameterServerStrategy (the chief): the calls are scheduled with
  `ClusterCoordinator.schedule` on per-worker datasets; a worker that fails has
  its call run again on another one (the coordinator's at-least-once rule); the
  epoch ends with `join()`, and its logs are the last call's. `model.stop_training`
  is checked after each call is scheduled, as `fit` does after each step. A Keras 3
  variable's `assign_add` / `assign_sub` reads, adds and assigns, so two workers'
  concurrent steps lose updates (the optimizer's `iterations` lagging the steps
  run: docs/benchmarks.md, "Figures the code quotes"); while the loop traces and schedules its
  steps (only then), they are the underlying `tf.Variable`'s own, atomic on the
  ps, as on tf_keras (`atomic_updates`). Batch-level callbacks get each call's
  last batch after it is scheduled, with the call's `RemoteValue` as logs when
  they take TensorFlow logs (`_supports_tf_logs`, as trainexec's progress does),
  else with its values fetched (which waits for that call).

The one iterator lasts across `fit` calls: a job's data goes on where the
previous save interval left it.

Example:
    ```python
    loop = DistributedFit(model, strategy, plan, train_spec.input_fn)
    loop.fit(steps_per_epoch=100, epochs=3, callbacks=[...])
    ```
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Callable, Sequence

from trainexec.errors import ConfigError
from trainexec.keras.compat.coordinator import (being_scheduled, can_mark_scheduling,
                                                worker_iterator_spec)
from trainexec.keras.compat.fit_loop import build_compiled_state, takes_tf_logs
from trainexec.keras.compat.variables import atomic_updates
from trainexec.keras.fit.input_data import (call_input_fn, checked_dataset, input_options,
                                             takes_argument)
from trainexec.keras.fit.log_values import log_values
from trainexec.keras.strategy import (DISTRIBUTED_KINDS, MULTI_WORKER_MIRRORED,
                                      PARAMETER_SERVER, STRATEGY_NAMES, StrategyPlan)

__all__ = ["DEFAULT_STEPS_PER_CALL", "DistributedFit", "atomic_updates", "steps_per_call"]

logger = logging.getLogger(__name__)

DEFAULT_STEPS_PER_CALL = 10



def steps_per_call(model: Any) -> int:
    """Steps per `tf.function` call: the model's `steps_per_execution` when it was
    compiled with more than 1, else `DEFAULT_STEPS_PER_CALL`."""
    compiled = getattr(model, "steps_per_execution", 1)
    try:
        compiled = int(compiled)
    except (TypeError, ValueError):
        compiled = 1
    return compiled if compiled > 1 else DEFAULT_STEPS_PER_CALL


def _overrides_train_step(model: Any) -> bool:
    import tensorflow as tf

    own = getattr(type(model), "train_step", None)
    return own is not None and own is not getattr(tf.keras.Model, "train_step", None)


def _dataset(input_fn: Callable, context: Any) -> Any:
    return checked_dataset(call_input_fn(input_fn, context))


class DistributedFit:
    """`model.fit` for a Keras 3 model under MWMS or PSS (see the module doc).

    Args:
      model: the compiled model, built in `strategy`'s scope (with its optimizer).
      strategy: the task's MultiWorkerMirroredStrategy or ParameterServerStrategy.
      plan: the task's `StrategyPlan` (its kind picks the loop).
      input_fn: the training `input_fn` (global batches, or per-replica batches
        of the `InputContext`'s shard when it takes one).
    """

    def __init__(self, model: Any, strategy: Any, plan: StrategyPlan,
                 input_fn: Callable) -> None:
        if plan.kind not in DISTRIBUTED_KINDS:
            raise ValueError(f"DistributedFit trains under MultiWorkerMirroredStrategy or "
                             f"ParameterServerStrategy, not {plan.kind!r}")
        self.model = model
        self.strategy = strategy
        self.plan = plan
        self.input_fn = input_fn
        self.steps_per_call = steps_per_call(model)
        # ParameterServerStrategy's ClusterCoordinator (TensorFlow's), made with the
        # iterator (`_distributed_iterator`); None under MultiWorkerMirroredStrategy.
        self._coordinator: Any | None = None
        self._iterator = None
        self._endless = False  # the input_fn's dataset repeats forever (see _element_spec)
        self._functions: dict[int, Any] = {}
        self._build_compiled_state()

    @property
    def strategy_name(self) -> str:
        return STRATEGY_NAMES[self.plan.kind]

    # -- set-up ------------------------------------------------------------------------
    def _element_spec(self) -> Any:
        import tensorflow as tf

        dataset = _dataset(self.input_fn, tf.distribute.InputContext())
        self._endless = bool(dataset.cardinality() == tf.data.INFINITE_CARDINALITY)
        return dataset.element_spec

    def _build_compiled_state(self) -> None:
        """Creates the compiled loss's and metrics' variables in the strategy's
        scope, cross-replica, from the dataset's element spec (shapes only)."""
        model = self.model
        if not model.built or not model.weights:
            raise ConfigError(
                f"build_model() returned a {type(model).__name__} whose weights are not "
                f"created yet; under {self.strategy_name} they must exist before "
                "training: give a Sequential or functional model an Input layer, or call "
                "a subclassed model once on a batch (model(x)) in build_model")
        with self.strategy.scope():
            build_compiled_state(model, self._element_spec())

    def _distributed_iterator(self) -> Any:
        strategy = self.strategy
        if self.plan.kind == PARAMETER_SERVER:
            import tensorflow as tf

            coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
            self._coordinator = coordinator
            input_fn = self.input_fn

            def per_worker():
                return strategy.distribute_datasets_from_function(
                    lambda context: _dataset(input_fn, context))

            return iter(coordinator.create_per_worker_dataset(per_worker))
        options = input_options()
        if takes_argument(self.input_fn):
            return iter(strategy.distribute_datasets_from_function(
                lambda context: _dataset(self.input_fn, context), options=options))
        return iter(strategy.experimental_distribute_dataset(_dataset(self.input_fn, None),
                                                             options=options))

    def _reduce(self, outputs: Any) -> Any:
        """The replicas' step outputs as `fit` logs them: averaged over replicas
        (all workers' under MWMS; this worker's under PSS)."""
        import tensorflow as tf

        strategy = self.strategy

        def reduce(value):
            if self.plan.kind == MULTI_WORKER_MIRRORED:
                return strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None)
            local = strategy.experimental_local_results(value)
            return local[0] if len(local) == 1 else tf.add_n(list(local)) / len(local)

        return tf.nest.map_structure(reduce, outputs)

    def _function(self, steps: int) -> Any:
        """The `tf.function` that runs `steps` steps on the iterator, traced once per
        number of steps; the first trace checks that `train_step` can run in a
        replica context."""
        if steps in self._functions:
            return self._functions[steps]
        import tensorflow as tf

        strategy, model = self.strategy, self.model

        @tf.function
        def train_steps(iterator):
            for _ in tf.range(steps - 1):
                strategy.run(model.train_step, args=(next(iterator),))
            return self._reduce(strategy.run(model.train_step, args=(next(iterator),)))

        if self._iterator is None:
            self._iterator = self._distributed_iterator()
        try:
            self._trace(train_steps)
        except (ConfigError, KeyboardInterrupt):
            raise
        except Exception as err:
            if not _overrides_train_step(model):
                raise
            raise self._failed_in_replica_context(err) from err
        self._functions[steps] = train_steps
        return train_steps

    def _trace(self, train_steps: Any) -> None:
        """Traces `train_steps` for the iterator, before any step runs.

        MWMS: for the task's own iterator. PSS: for one worker's iterator, as
        `ClusterCoordinator.schedule` traces a function (in the strategy's scope,
        marked as being scheduled), so that `schedule` finds it traced. TensorFlow
        has no public way to get a worker's iterator spec: when it cannot be read,
        the first `schedule` traces the function instead.
        """
        if self.plan.kind == MULTI_WORKER_MIRRORED:
            train_steps.get_concrete_function(self._iterator)
            return
        spec = worker_iterator_spec(self._iterator)
        if spec is None or not can_mark_scheduling(self.strategy):
            logger.debug("Cannot read a worker's iterator spec: not tracing before training")
            return
        with self.strategy.scope(), self._updates(), being_scheduled(self.strategy):
            train_steps.get_concrete_function(spec)

    def _updates(self) -> Any:
        """Atomic variable updates (`atomic_updates`) while a PSS step is traced or
        scheduled; nothing under MWMS, where each task updates its own copy."""
        if self.plan.kind != PARAMETER_SERVER:
            return contextlib.nullcontext()
        return atomic_updates(type(self.model.optimizer.iterations))

    def _failed_in_replica_context(self, err: BaseException) -> ConfigError:
        name = type(self.model).__name__
        # A tf.function's error starts with "in user code:" and the frames; its
        # last line says what failed.
        said = ([line.strip() for line in str(err).splitlines() if line.strip()]
                or [type(err).__name__])[-1]
        return ConfigError(
            f"{name}.train_step failed when traced in a replica context under "
            f"{self.strategy_name} ({type(err).__name__}: {said}), where trainexec "
            "trains Keras 3 models with strategy.run(model.train_step) because Keras 3's "
            "model.fit cannot; it may use cross-replica calls or create variables, which "
            "a replica context does not allow. Write train_step for one replica's batch "
            "(no cross-replica calls such as strategy.reduce or merge_call, no new "
            "variables; use self.compute_loss, self.optimizer.apply_gradients and "
            "self.compute_metrics), or train this cluster with tf_keras "
            "(TF_USE_LEGACY_KERAS=1, pip install \"trainexec[tf-keras]\")")

    # -- the loop ------------------------------------------------------------------------
    def fit(self, steps_per_epoch: int, epochs: int = 1, initial_epoch: int = 0,
            callbacks: Sequence[Any] = (), verbose: int | str = 0) -> Any:
        """Trains `epochs - initial_epoch` epochs of `steps_per_epoch` steps, calling
        `callbacks` as `model.fit` does; returns the History callback."""
        import tensorflow as tf

        model = self.model
        callback_list = tf.keras.callbacks.CallbackList(
            list(callbacks), add_history=True, add_progbar=verbose != 0, model=model,
            verbose=verbose, epochs=epochs, steps=steps_per_epoch)
        model.stop_training = False
        callback_list.on_train_begin()
        epoch_logs: dict = {}
        for epoch in range(initial_epoch, epochs):
            model.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            logs = self._epoch(steps_per_epoch, callback_list)
            epoch_logs = dict(logs)
            callback_list.on_epoch_end(epoch, epoch_logs)
            if model.stop_training:
                break
        finalize = getattr(model.optimizer, "finalize_variable_values", None)
        if callable(finalize):
            finalize(model.trainable_weights)
        callback_list.on_train_end(logs=epoch_logs)
        return model.history

    def _calls(self, steps_per_epoch: int) -> list[tuple[int, int]]:
        """(first batch, steps) of each call of an epoch."""
        calls, begin = [], 0
        while begin < steps_per_epoch:
            steps = min(self.steps_per_call, steps_per_epoch - begin)
            calls.append((begin, steps))
            begin += steps
        return calls

    def _epoch(self, steps_per_epoch: int, callback_list: Any) -> dict:
        if self.plan.kind == PARAMETER_SERVER:
            return self._scheduled_epoch(steps_per_epoch, callback_list)
        logs: dict = {}
        for begin, steps in self._calls(steps_per_epoch):
            function = self._function(steps)
            callback_list.on_train_batch_begin(begin)
            logs = log_values(function(self._iterator))
            callback_list.on_train_batch_end(begin + steps - 1, logs)
            if self.model.stop_training:
                break
        return logs

    def _scheduler(self) -> Any:
        """The ClusterCoordinator, made with the iterator by the first `_function`."""
        assert self._coordinator is not None, "scheduled before the first _function"
        return self._coordinator

    def _scheduled_epoch(self, steps_per_epoch: int, callback_list: Any) -> dict:
        """Schedules the epoch's calls on the PSS workers, then waits for them all.

        After each call is scheduled, the batch-level callbacks get its last batch,
        as under tf_keras' `fit`: a callback that takes TensorFlow logs
        (`_supports_tf_logs`, such as trainexec's progress) gets the call's
        `RemoteValue` and fetches it only when it needs the values; the others,
        when one of them has batch hooks, get the values fetched, which waits for
        that call (once per call, for all of them).
        """
        import tensorflow as tf

        last = None
        try:
            for begin, steps in self._calls(steps_per_epoch):
                function = self._function(steps)
                callback_list.on_train_batch_begin(begin)
                with self._updates():
                    last = self._scheduler().schedule(function, args=(self._iterator,))
                _remote_batch_end(callback_list, begin + steps - 1, last)
                if self.model.stop_training:
                    break
            self._scheduler().join()
            return log_values(last) if last is not None else {}
        except tf.errors.OutOfRangeError as err:
            if not self._endless:
                raise
            # A dataset that repeats forever cannot run out: a worker's iterator was
            # lost with the connection to it (seen after the chief was cut off from
            # every worker and ps for 30 s). A restart resumes from the last save.
            raise tf.errors.UnavailableError(
                None, None, "a ParameterServerStrategy worker's dataset iterator ended "
                "although train_spec.input_fn's dataset repeats forever: its state was "
                f"lost with a peer ({str(err).strip().splitlines()[0]})") from err


def _has_batch_end_hook(callback: Any) -> bool:
    """Whether `callback` does anything at the end of a training batch."""
    import tensorflow as tf

    base = tf.keras.callbacks.Callback
    return any(getattr(type(callback), hook, None) is not getattr(base, hook, None)
               for hook in ("on_train_batch_end", "on_batch_end"))


def _remote_batch_end(callback_list: Any, batch: int, logs: Any) -> None:
    """`on_train_batch_end(batch, logs)` of each callback with a batch hook, where
    `logs` is a `RemoteValue` (see `DistributedFit._scheduled_epoch`)."""
    fetched = None
    for callback in callback_list.callbacks:
        if takes_tf_logs(callback):
            callback.on_train_batch_end(batch, logs=logs)
        elif _has_batch_end_hook(callback):
            if fetched is None:
                fetched = log_values(logs)
            callback.on_train_batch_end(batch, logs=dict(fetched))
