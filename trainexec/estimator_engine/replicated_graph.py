"""One mode's graph under a distribution strategy: the `model_fn` once per replica.

`build_replicated` is `graph.build_graph`'s counterpart for a RunConfig's
`train_distribute` (TRAIN) or `eval_distribute` (EVAL), built in a new graph within
`strategy.scope()` (and, to train, `compat.loss_scaling.estimator_loss_scaling`), in
the order tf.estimator built it, so that with a `tf_random_seed` the initial values
are tf.estimator's too:

1. the input: `strategy.make_input_fn_iterator` calls the `input_fn` once per input
   pipeline (its `input_context` says which, for `Dataset.shard`), and every replica
   takes its own batch from it: the batch size is per replica. The input_fn returns a
   `tf.data.Dataset` (or `trainexec.estimator.inputs`' tensors, read as theirs), read
   without tf.data's autotuning unless it asks (`input_fn.strategy_iterator`); a hook
   (re)initializes the iterator in each session;
2. the global step (a mirrored variable), and the read of it the standard hooks fetch;
3. `strategy.extended.call_for_each_replica(model_fn, ...)`, each replica with its
   batch, `mode`, and the `params` and `config` as without a strategy;
4. TRAIN: one `EstimatorSpec`: the replicas' losses reduced as tf.estimator reduced them
   (`compat.loss_scaling.reported_loss_reduction`), their train ops grouped, the first
   replica's `training_hooks` and `training_chief_hooks`, and one Scaffold of theirs
   (`combined_scaffold`). EVAL: a `ReplicatedEval`, the replicas' losses and metrics,
   the first replica's `evaluation_hooks`, their Scaffold combined;
   `replicated_metrics` adds the loss metric to each replica's metrics and groups
   their updates.

A Keras 3 layer made in a replica under a strategy with several devices on this machine
keeps each replica's copy of its variables among the graph's variables
(`dense/kernel/replica_1`), so its checkpoints would not be tf.estimator's and would not
restore elsewhere: `check_replica_variables` refuses it (ConfigError naming the field,
the strategy and what to use) before any session starts, so nothing is written.

Example:
    ```python
    with tf.Graph().as_default(), strategy.scope():
        built = build_replicated(estimator.model_fn, params, config, ModeKeys.TRAIN,
                                 input_fn, strategy)
        built.spec.loss, built.spec.train_op
    ```
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, NamedTuple

import tensorflow as tf

from trainexec.errors import ConfigError
from trainexec.estimator_engine.compat.loss_scaling import reported_loss_reduction
from trainexec.estimator_engine.graph import GLOBAL_STEP_READ_COLLECTION, Built
from trainexec.estimator_engine.input_fn import (as_dataset, invoke_input_fn,
                                                 split_features_and_labels, strategy_iterator)
from trainexec.estimator_engine.model_fn_keras import keras_scope
from trainexec.estimator_engine.model_spec import EstimatorSpec, ModeKeys
from trainexec.estimator_engine.strategy_checks import describe

__all__ = ["ReplicatedEval", "build_replicated", "check_replica_variables",
           "combined_scaffold", "first_replicas", "replicated_metrics"]

logger = logging.getLogger(__name__)


class ReplicatedEval(NamedTuple):
    """An EVAL `model_fn` over the replicas: each replica's loss and metrics (values
    and per-replica updates), the first replica's hooks, the replicas' Scaffold."""

    mode: str
    loss: Any
    eval_metric_ops: Mapping[str, Any]
    evaluation_hooks: tuple
    scaffold: Any


class _DistributedIteratorHook(tf.compat.v1.train.SessionRunHook):
    """(Re)initializes a strategy's input iterator in every session created; its
    initializer is made in `begin`, after the model, as tf.estimator made it."""

    def __init__(self, iterator: Any) -> None:
        self._iterator = iterator
        self._initializer: Any = None

    def begin(self) -> None:
        if self._initializer is None:
            self._initializer = self._iterator.initialize()

    def after_create_session(self, session: Any, coord: Any) -> None:
        del coord
        session.run(self._initializer)


def _replicated_input(input_fn: Callable, mode: str, params: Any, config: Any,
                      strategy: Any) -> tuple[Any, Any]:
    """The strategy's iterator over `input_fn`'s dataset, and the hook starting it."""

    def dataset(input_context: Any) -> Any:
        result = as_dataset(invoke_input_fn(input_fn, mode, params, config, input_context))
        if not isinstance(result, tf.data.Dataset):
            name = getattr(input_fn, "__name__", type(input_fn).__name__)
            raise TypeError(
                f"input_fn ({name}) returned {type(result).__name__}, but under a "
                f"distribution strategy ({type(strategy).__name__}) it must return a "
                "tf.data.Dataset, which the strategy splits among its replicas: return "
                "tf.data.Dataset.from_tensor_slices(...)... (batched per replica)")
        return result

    with tf.compat.v1.device("/cpu:0"):
        iterator = strategy_iterator(strategy, dataset)
    return iterator, _DistributedIteratorHook(iterator)


def first_replicas(grouped: Any, strategy: Any) -> tuple:
    """The first replica's object of each per-replica entry of `grouped` (hooks)."""
    return tuple(strategy.experimental_local_results(item)[0] for item in grouped or ())


def _joined(strategy: Any, per_replica: Any) -> Any:
    """One tensor of the replicas' (`ready_op`s: the variables they report)."""
    if per_replica is None:
        return None
    values = tf.nest.flatten(strategy.experimental_local_results(per_replica))
    return values[0] if len(values) == 1 else tf.concat(values, 0)


def _ready_for_local_init(scaffold: Any) -> Any:
    if scaffold.ready_for_local_init_op is not None:
        return scaffold.ready_for_local_init_op
    return tf.compat.v1.train.Scaffold.get_or_default(
        "ready_for_local_init_op", tf.compat.v1.GraphKeys.READY_FOR_LOCAL_INIT_OP,
        lambda: tf.compat.v1.report_uninitialized_variables(
            tf.compat.v1.global_variables()))


def combined_scaffold(grouped: Any, strategy: Any) -> Any:
    """One Scaffold of the replicas' Scaffolds: their init, local init and summary ops
    grouped, their `ready_op`s and `ready_for_local_init_op`s joined (each replica's
    made in its own context), the first Saver, init_fn and the feeds of all."""
    scaffolds = strategy.experimental_local_results(grouped)

    def grouped_ops(name: str) -> Any:
        ops = [getattr(s, name) for s in scaffolds if getattr(s, name) is not None]
        return strategy.group(ops) if ops else None

    feeds = {key: value for s in scaffolds for key, value in (s.init_feed_dict or {}).items()}
    init_fns = [s.init_fn for s in scaffolds if s.init_fn is not None]
    savers = [s.saver for s in scaffolds if s.saver is not None]
    ready = strategy.extended.call_for_each_replica(lambda s: s.ready_op, args=(grouped,))
    ready_for_local = strategy.extended.call_for_each_replica(_ready_for_local_init,
                                                              args=(grouped,))
    init_fn = init_fns[0] if init_fns else None
    return tf.compat.v1.train.Scaffold(
        init_op=grouped_ops("init_op"), init_feed_dict=feeds or None,
        init_fn=(lambda _, session: init_fn(session)) if init_fn is not None else None,
        ready_op=_joined(strategy, ready),
        ready_for_local_init_op=_joined(strategy, ready_for_local),
        local_init_op=grouped_ops("local_init_op"), summary_op=grouped_ops("summary_op"),
        saver=savers[0] if savers else None)


def check_replica_variables(strategy: Any, field: str) -> None:
    """ConfigError when the graph's variables hold replicas' own copies of a mirrored
    variable (Keras 3 layers under a strategy with several local devices; module doc)."""
    copies = {id(part) for variable in tf.compat.v1.global_variables()
              if isinstance(variable, tf.distribute.DistributedValues)
              for part in strategy.experimental_local_results(variable)[1:]}
    leaked = [variable.name for variable in tf.compat.v1.global_variables()
              if id(variable) in copies]
    if leaked:
        raise ConfigError(
            f"RunConfig `{field}` ({describe(strategy)}): the model_fn's variables "
            f"{', '.join(leaked[:3])} are replicas' copies that Keras 3 layers keep among "
            "the graph's variables, so checkpoints would not be tf.estimator's. Use "
            "tf_keras (pip install tf_keras; TF_USE_LEGACY_KERAS=1), "
            "tf.compat.v1.get_variable, or a strategy with one device on this machine "
            "(MultiWorkerMirroredStrategy across tasks)")


def build_replicated(model_fn: Callable, params: Any, config: Any, mode: str,
                     input_fn: Callable, strategy: Any) -> Built:
    """Builds `mode`'s graph (TRAIN or EVAL) under `strategy` in the current graph,
    within `strategy.scope()` (module doc)."""
    if config.tf_random_seed is not None:
        tf.compat.v1.random.set_random_seed(config.tf_random_seed)
    if mode == ModeKeys.TRAIN:
        iterator, input_hook = _replicated_input(input_fn, mode, params, config, strategy)
        global_step = tf.compat.v1.train.get_or_create_global_step()
        tf.compat.v1.add_to_collection(GLOBAL_STEP_READ_COLLECTION,
                                       strategy.extended.read_var(global_step))
    else:  # EVAL, as tf.estimator's evaluation: the global step first
        global_step = tf.compat.v1.train.get_or_create_global_step()
        iterator, input_hook = _replicated_input(input_fn, mode, params, config, strategy)
    features, labels = split_features_and_labels(iterator.get_next(),
                                                 "the input_fn's dataset")
    logger.info("Calling model_fn.")
    with keras_scope():
        grouped = strategy.extended.call_for_each_replica(
            model_fn, args=(features, labels, mode, config))
    logger.info("Done calling model_fn.")
    check_replica_variables(strategy, "train_distribute" if mode == ModeKeys.TRAIN
                            else "eval_distribute")
    scaffold = combined_scaffold(grouped.scaffold, strategy)
    spec: Any
    if mode == ModeKeys.TRAIN:
        spec = EstimatorSpec(
            mode, loss=strategy.reduce(reported_loss_reduction(), grouped.loss, axis=None),
            train_op=strategy.group(grouped.train_op),
            training_hooks=first_replicas(grouped.training_hooks, strategy),
            training_chief_hooks=first_replicas(grouped.training_chief_hooks, strategy),
            scaffold=scaffold)
    else:
        spec = ReplicatedEval(mode, grouped.loss, dict(grouped.eval_metric_ops or {}),
                              first_replicas(grouped.evaluation_hooks, strategy), scaffold)
    return Built(spec, global_step, (input_hook,), None, features)


def replicated_metrics(spec: Any, strategy: Any, loss_key: str) -> dict:
    """{name: (value, update_op)} of an EVAL `spec` built by `build_replicated`: its
    metrics and, as `loss_key`, each replica's loss averaged, every update op grouped
    across the replicas. Call within `strategy.scope()`."""
    metrics = dict(spec.eval_metric_ops)
    metrics[loss_key] = strategy.extended.call_for_each_replica(
        tf.compat.v1.metrics.mean, args=(spec.loss,))
    return {name: (value, strategy.group(update))
            for name, (value, update) in sorted(metrics.items())}
