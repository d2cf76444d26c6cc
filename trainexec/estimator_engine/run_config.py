"""`RunConfig`: where an Estimator writes, how often it saves, and which task it is.

`tf.estimator.RunConfig`'s arguments, defaults, checks and answers, on public TensorFlow:

* the fields: checkpoints every 600 s unless `save_checkpoints_steps` is given (not
  both), 5 kept, summaries and step-rate logs every 100 steps; each value is checked
  (`trainexec.estimator_engine.run_config_checks`), and a bad one is a ValueError that
  starts with tf.estimator's words, then names the value and the fix;
* the task: read from TF_CONFIG once, when the RunConfig is built, by tf.estimator's
  rules (`trainexec.estimator_engine.task_placement`): `cluster_spec`, `task_type`,
  `task_id`, `master`, `evaluation_master`, `is_chief`, `num_ps_replicas`,
  `num_worker_replicas`, `global_id_in_cluster`, and TF_CONFIG's `service` and
  `model_dir` (which the `model_dir` argument must then equal, if given). Without
  TF_CONFIG this is worker 0 of no cluster (the chief); a Slurm job step that
  `TRAINEXEC_SLURM_ROLES` describes gives its cluster instead (`trainexec.cluster.slurm`);
* `session_config`: the one given; else, in a cluster, device filters for the chief,
  master, workers and ps (`session_configs.cluster_session_config`); else None, and the
  Estimator uses `session_configs.default_session_config()`;
* `replace(**changes)`: a copy (of the same class, with any attributes set on it) with
  some fields changed and checked again; the task is kept. Setting one way of saving
  checkpoints turns the other off.

Addresses in TF_CONFIG are only names to a RunConfig (port 0 is fine for a spec that only
names the tasks); `train_and_evaluate` checks them before any server starts.

`train_distribute` / `eval_distribute` are refused: they run through TensorFlow's
private distribute coordinator. Distribution strategies are `trainexec.KerasTrainer`'s.

Example:
    ```python
    config = RunConfig(model_dir="/tmp/m", save_checkpoints_steps=100,
                       keep_checkpoint_max=3, tf_random_seed=7)
    config.is_chief, config.task_type           # (True, "worker") without TF_CONFIG
    config.replace(save_checkpoints_secs=60).save_checkpoints_steps   # None
    ```
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.estimator_engine.run_config_checks import (USE_DEFAULT, check_fields,
                                                          constructor_saving, path_to_str,
                                                          replaced_saving, resolve_model_dir)
from trainexec.estimator_engine.session_configs import cluster_session_config
from trainexec.estimator_engine.task_placement import TaskPlacement, place_task, read_tf_config

__all__ = ["RunConfig"]

_STRATEGIES = ("train_distribute", "eval_distribute", "experimental_distribute")
_FIELDS = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
           "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
           "keep_checkpoint_every_n_hours", "log_step_count_steps", "device_fn",
           "protocol", "experimental_max_worker_delay_secs",
           "session_creation_timeout_secs", "checkpoint_save_graph_def")
_REPLACEABLE = (*_FIELDS, *_STRATEGIES)
_FROM_TF_CONFIG = ("cluster_spec", "task_type", "task_id", "master", "evaluation_master",
                   "is_chief", "num_ps_replicas", "num_worker_replicas",
                   "global_id_in_cluster", "service")


def _refuse_strategies(given: Mapping[str, Any]) -> None:
    for field in _STRATEGIES:
        value = given.get(field)
        if value is not None and _is_tf2_parameter_server_strategy(value):
            raise ConfigError(
                f"Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` "
                f"for parameter server training: RunConfig `{field}` is TensorFlow 2's "
                f"{type(value).__name__}, which Estimators never ran. trainexec.estimator "
                "trains with the ps of a TF_CONFIG cluster when `train_distribute` is left "
                "unset (between-graph replication, as tf.estimator did)")
        if value is not None:
            raise ConfigError(
                f"RunConfig `{field}` ({type(value).__name__}) is not supported by "
                "trainexec.estimator: tf.estimator ran it through TensorFlow's private "
                "distribute coordinator. Leave it unset for parameter-server "
                "(between-graph) training, or train a Keras model with "
                "trainexec.KerasTrainer, which takes MultiWorkerMirroredStrategy or "
                "ParameterServerStrategy from TF_CONFIG")


def _is_tf2_parameter_server_strategy(strategy: Any) -> bool:
    import tensorflow as tf

    tf2 = getattr(getattr(tf.distribute, "experimental", None), "ParameterServerStrategy",
                  None)
    return tf2 is not None and isinstance(strategy, tf2) and not isinstance(
        strategy, tf.compat.v1.distribute.experimental.ParameterServerStrategy)


class RunConfig:
    """The run settings of an `Estimator` and the task it runs as (module doc).

    Args:
      model_dir: where checkpoints and summaries go (a path-like is read as its path);
        None: TF_CONFIG's `model_dir`, else the Estimator's choice.
      tf_random_seed: the graph-level random seed, or None.
      save_summary_steps: summaries every this many steps (0 or None: none).
      save_checkpoints_steps: checkpoints every this many steps; this or
        `save_checkpoints_secs` (600 s when neither is given; both None: none).
      save_checkpoints_secs: checkpoints every this many seconds.
      session_config: a `tf.compat.v1.ConfigProto` for the Estimator's sessions.
      keep_checkpoint_max: how many recent checkpoints are kept (0 or None: all).
      keep_checkpoint_every_n_hours: also keep one checkpoint per this many hours.
      log_step_count_steps: the step rate and loss are logged every this many steps.
      train_distribute: refused (module doc).
      eval_distribute: refused (module doc).
      experimental_distribute: refused (module doc).
      device_fn: `device_fn(op)` -> device for every op, instead of the default (the
        variables on the ps of a cluster with ps).
      protocol: the servers' protocol ("grpc" when None, or "grpc+verbs").
      experimental_max_worker_delay_secs: a worker waits up to this long (whole
        seconds) before it starts training (default 60 s at most).
      session_creation_timeout_secs: how long a worker waits for its session.
      checkpoint_save_graph_def: whether the graph is written with the checkpoints.
      cluster: trainexec's: a `ClusterConfig` read instead of TF_CONFIG.

    Raises:
      ValueError: a bad value (tf.estimator's words, then the value and the fix).
      ConfigError: a TF_CONFIG tf.estimator's RunConfig refuses, or a distribution
        strategy (both are ValueErrors).
      TypeError: TF_CONFIG's `service` is not an object.
    """

    def __init__(self, model_dir: Any = None, tf_random_seed: int | None = None,
                 save_summary_steps: int | None = 100, save_checkpoints_steps: Any = USE_DEFAULT,
                 save_checkpoints_secs: Any = USE_DEFAULT, session_config: Any = None,
                 keep_checkpoint_max: int | None = 5,
                 keep_checkpoint_every_n_hours: float | None = 10000,
                 log_step_count_steps: int | None = 100, train_distribute: Any = None,
                 device_fn: Any = None, protocol: str | None = None,
                 eval_distribute: Any = None, experimental_distribute: Any = None,
                 experimental_max_worker_delay_secs: int | None = None,
                 session_creation_timeout_secs: float | None = 7200,
                 checkpoint_save_graph_def: bool = True,
                 cluster: ClusterConfig | None = None) -> None:
        steps, secs = constructor_saving(save_checkpoints_steps, save_checkpoints_secs)
        _refuse_strategies(dict(train_distribute=train_distribute,
                                eval_distribute=eval_distribute,
                                experimental_distribute=experimental_distribute))
        tf_config = cluster.to_dict() if cluster is not None else read_tf_config()
        values: dict[str, Any] = dict(
            model_dir=resolve_model_dir(model_dir, tf_config), tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps, save_checkpoints_steps=steps,
            save_checkpoints_secs=secs, session_config=session_config,
            keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps, device_fn=device_fn,
            protocol=protocol,
            experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
            session_creation_timeout_secs=session_creation_timeout_secs,
            checkpoint_save_graph_def=checkpoint_save_graph_def)
        check_fields(values)
        placement = place_task(tf_config)
        if session_config is None and placement.cluster:
            values["session_config"] = cluster_session_config(placement.task_type,
                                                              placement.task_id)
        self._values = values
        self._placement: TaskPlacement = placement

    def replace(self, **changes: Any) -> "RunConfig":
        """A copy with `changes` (the constructor's fields; not the task, which comes
        from TF_CONFIG), checked as the constructor checks them. Setting
        `save_checkpoints_steps` turns `save_checkpoints_secs` off, and the reverse."""
        refused = [field for field in changes if field not in _REPLACEABLE]
        if refused:
            why = (" (this task's place in the cluster comes from TF_CONFIG when a RunConfig "
                   "is built: set TF_CONFIG, then build a new RunConfig)"
                   if set(refused) & set(_FROM_TF_CONFIG) else "")
            raise ValueError(
                f"Replacing {', '.join(refused)} is not supported. Allowed properties are "
                f"{', '.join(_REPLACEABLE)}{why}")
        _refuse_strategies(changes)
        changes = {k: v for k, v in changes.items() if k not in _STRATEGIES}
        if "model_dir" in changes:
            changes["model_dir"] = path_to_str(changes["model_dir"])
        values = dict(self._values)
        values.update(changes)
        values["save_checkpoints_steps"], values["save_checkpoints_secs"] = replaced_saving(
            self._values["save_checkpoints_steps"], self._values["save_checkpoints_secs"],
            changes)
        check_fields(values, where="RunConfig.replace")
        new = copy.copy(self)
        new._values = values
        return new

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self._values.items()
                           if k != "session_config")
        return (f"{type(self).__name__}({fields}, task={self.task_type}:{self.task_id}, "
                f"master={self.master!r})")

    def as_dict(self) -> Mapping[str, Any]:
        """The constructor's fields and their values."""
        return dict(self._values)

    # -- the fields ---------------------------------------------------------------------
    model_dir = property(lambda self: self._values["model_dir"])
    tf_random_seed = property(lambda self: self._values["tf_random_seed"])
    save_summary_steps = property(lambda self: self._values["save_summary_steps"])
    save_checkpoints_steps = property(lambda self: self._values["save_checkpoints_steps"])
    save_checkpoints_secs = property(lambda self: self._values["save_checkpoints_secs"])
    session_config = property(lambda self: self._values["session_config"])
    keep_checkpoint_max = property(lambda self: self._values["keep_checkpoint_max"])
    keep_checkpoint_every_n_hours = property(
        lambda self: self._values["keep_checkpoint_every_n_hours"])
    log_step_count_steps = property(lambda self: self._values["log_step_count_steps"])
    device_fn = property(lambda self: self._values["device_fn"])
    protocol = property(lambda self: self._values["protocol"])
    experimental_max_worker_delay_secs = property(
        lambda self: self._values["experimental_max_worker_delay_secs"])
    session_creation_timeout_secs = property(
        lambda self: self._values["session_creation_timeout_secs"])
    checkpoint_save_graph_def = property(
        lambda self: self._values["checkpoint_save_graph_def"])
    train_distribute = property(lambda self: None)
    eval_distribute = property(lambda self: None)

    # -- the task (from TF_CONFIG) ------------------------------------------------------
    task_type = property(lambda self: self._placement.task_type)
    task_id = property(lambda self: self._placement.task_id)
    master = property(lambda self: self._placement.master)
    evaluation_master = property(lambda self: self._placement.evaluation_master)
    is_chief = property(lambda self: self._placement.is_chief)
    num_ps_replicas = property(lambda self: self._placement.num_ps_replicas)
    num_worker_replicas = property(lambda self: self._placement.num_worker_replicas)
    global_id_in_cluster = property(lambda self: self._placement.global_id_in_cluster)
    service = property(lambda self: self._placement.service)

    @property
    def cluster_spec(self) -> Any:
        """The cluster as a `tf.train.ClusterSpec`: TF_CONFIG's, or empty on one machine
        and for an evaluator."""
        import tensorflow as tf

        return tf.train.ClusterSpec({
            job: dict(tasks) if isinstance(tasks, dict) else list(tasks)
            for job, tasks in self._placement.cluster.items()})
