"""One mode's graph: the global step, the input, the `model_fn`, on this task's devices.

`build_graph` is what `train`, `evaluate`, `predict` and `export_saved_model` share:
in the current graph it seeds the graph (`RunConfig.tf_random_seed`), creates the
global step, calls the `input_fn` (or takes the serving features) and the `model_fn`
(`Estimator.model_fn`: the user's, bound to the params),
under a device function that puts variables on the ps when the cluster has some
(`tf.compat.v1.train.replica_device_setter`, as tf.estimator did). The `model_fn` runs in
`model_fn_keras.keras_scope` (its Keras layers named alike in every graph). `saver_for` gives
the Scaffold the Saver tf.estimator gave it (sharded, relative paths, the RunConfig's
`keep_checkpoint_max`), so checkpoints are the ones tf.estimator wrote.

Example:
    ```python
    with tf.Graph().as_default():
        built = build_graph(estimator.model_fn, params, config, ModeKeys.EVAL,
                            input_fn=input_fn)
        built.spec.loss, built.global_step, built.input_hooks
    ```
"""

from __future__ import annotations

import logging
from typing import Any, Callable, NamedTuple

import tensorflow as tf

from trainexec.estimator_engine.input_fn import call_input_fn
from trainexec.estimator_engine.model_fn_keras import keras_scope
from trainexec.estimator_engine.model_spec import ModeKeys

__all__ = ["Built", "build_graph", "device_fn_for", "saver_for", "with_local_variables_init"]

logger = logging.getLogger(__name__)


class Built(NamedTuple):
    """A mode's graph: the model_fn's spec, the global step, the input's hooks, the
    op releasing its data (`input_fn.Inputs.release`) and the features given to the
    model_fn."""

    spec: Any  # an EstimatorSpec (under an eval_distribute strategy, a ReplicatedEval)
    global_step: Any
    input_hooks: tuple
    input_release: Any = None
    features: Any = None


# TensorFlow's standard hooks (step counter, checkpoint saver, summaries) fetch the
# global step from the read tensor kept in this graph collection, creating one after
# the model if there is none. tf.estimator made it right after the global step, in
# TRAIN mode; so does `build_graph`, which also keeps the graph's ops in tf.estimator's
# order: op-level random seeds derive from it, so initial values match tf.estimator's.
GLOBAL_STEP_READ_COLLECTION = "global_step_read_op_cache"


def _global_step_read(global_step: Any) -> Any:
    """The global step's value as the hooks fetch it (0 until it is initialized)."""
    with tf.compat.v1.name_scope(None), tf.compat.v1.name_scope(
            global_step.op.name + "/"):
        value = tf.cond(tf.compat.v1.is_variable_initialized(global_step),
                        global_step.read_value, lambda: global_step.initial_value)
        read = value + 0
    tf.compat.v1.add_to_collection(GLOBAL_STEP_READ_COLLECTION, read)
    return read


def device_fn_for(config: Any) -> Callable | None:
    """The RunConfig's `device_fn`, else variables on the ps of a cluster with a ps
    (round robin) and everything else on this task, else None."""
    if config.device_fn is not None:
        return config.device_fn
    if config.num_ps_replicas <= 0:
        return None
    return tf.compat.v1.train.replica_device_setter(
        ps_tasks=config.num_ps_replicas, merge_devices=True, cluster=config.cluster_spec,
        worker_device=f"/job:{config.task_type}/task:{config.task_id}")


def build_graph(model_fn: Callable, params: Any, config: Any, mode: str,
                input_fn: Callable | None = None, features: Any = None,
                on_devices: bool = True) -> Built:
    """Builds `mode`'s graph in the current graph (module doc): `model_fn` is called as
    `model_fn(features, labels, mode, config)` (`Estimator.model_fn`), `params` go to
    the `input_fn`. `features` (serving) stand in for an `input_fn`;
    `on_devices=False` builds without the cluster's device function (evaluation,
    prediction and export run in-process)."""
    if config.tf_random_seed is not None:
        tf.compat.v1.random.set_random_seed(config.tf_random_seed)
    device_fn = device_fn_for(config) if on_devices else None
    with tf.compat.v1.device(device_fn):
        global_step = tf.compat.v1.train.get_or_create_global_step()
        if mode == ModeKeys.TRAIN:
            _global_step_read(global_step)
        if input_fn is not None:
            with tf.compat.v1.device("/cpu:0"):
                inputs = call_input_fn(input_fn, mode, params, config)
            features, labels, hooks, release = inputs
            if mode == ModeKeys.PREDICT:
                labels = None  # a prediction sees no labels, as in tf.estimator
        else:
            labels, hooks, release = None, (), None
        logger.info("Calling model_fn.")
        with keras_scope():  # the same Keras layer names in every graph
            spec = model_fn(features, labels, mode, config)
        logger.info("Done calling model_fn.")
    return Built(spec, global_step, tuple(hooks), release, features)


def saver_for(scaffold: Any, config: Any) -> Any:
    """`scaffold` with a Saver: its own, the graph's SAVERS one, or tf.estimator's
    (sharded, relative paths, `keep_checkpoint_max` / `_every_n_hours`)."""
    if scaffold.saver is not None or tf.compat.v1.get_collection(
            tf.compat.v1.GraphKeys.SAVERS):
        return scaffold
    saver = tf.compat.v1.train.Saver(
        sharded=True, max_to_keep=config.keep_checkpoint_max,
        keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
        defer_build=True, save_relative_paths=True)
    tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.SAVERS, saver)
    return scaffold


def with_local_variables_init(scaffold: Any) -> Any:
    """`scaffold`, whose own `local_init_op` (if any) also initializes the local
    variables made after it (an evaluation's metrics and eval step), as tf.estimator
    ran them."""
    if scaffold.local_init_op is None:
        return scaffold
    return tf.compat.v1.train.Scaffold(
        local_init_op=tf.group(scaffold.local_init_op,
                               tf.compat.v1.train.Scaffold.default_local_init_op()),
        copy_from_scaffold=scaffold)
