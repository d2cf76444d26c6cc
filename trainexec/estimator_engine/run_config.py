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

`train_distribute` / `eval_distribute` (or `experimental_distribute`'s) take the
strategies tf.estimator ran in graph mode: MirroredStrategy, MultiWorkerMirroredStrategy
and tf.compat.v1's ParameterServerStrategy; the others are refused when the RunConfig
is built, naming the field, the value and what to use
(`trainexec.estimator_engine.strategy_checks`). With one of the last two, or an
`eval_distribute` (an evaluator's), a TF_CONFIG cluster of workers alone is taken
(worker 0 is the chief), as tf.estimator took it.

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
from trainexec.estimator_engine.run_config_checks import (USE_DEFAULT, check_fields,
                                                          constructor_saving, path_to_str,
                                                          replaced_saving, resolve_model_dir)
from trainexec.estimator_engine.session_configs import cluster_session_config
from trainexec.estimator_engine.strategy_checks import (MULTI_WORKER_MIRRORED,
                                                         PARAMETER_SERVER, check_cluster,
                                                         check_strategies, strategy_kind)
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
      train_distribute: a `tf.distribute` strategy the Estimator trains with (module
        doc), or None.
      eval_distribute: a strategy `evaluate` runs the model_fn with, or None.
      experimental_distribute: an object with `train_distribute` and
        `eval_distribute` (tf.estimator's `DistributeConfig`), read as those fields;
        its `remote_cluster` is refused.
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
        strategy trainexec.estimator does not run, or not in this cluster (both are
        ValueErrors).
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
        train_distribute, eval_distribute = check_strategies(
            train_distribute, eval_distribute, experimental_distribute)
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
        # As tf.estimator with a strategy: a cluster of workers alone, worker 0 leading,
        # for the training tasks of a cluster strategy and for an evaluator that
        # evaluates with a strategy of its own.
        placement = place_task(tf_config, workers_may_lead=eval_distribute is not None or (
            train_distribute is not None and strategy_kind(train_distribute) in (
                MULTI_WORKER_MIRRORED, PARAMETER_SERVER)))
        self._placement: TaskPlacement = placement
        self._check_cluster(train_distribute)
        if session_config is None and placement.cluster:
            values["session_config"] = cluster_session_config(placement.task_type,
                                                              placement.task_id)
        values.update(train_distribute=train_distribute, eval_distribute=eval_distribute)
        self._values = values

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
        if set(changes) & set(_STRATEGIES):
            train, evaluate = check_strategies(
                changes.get("train_distribute", self.train_distribute),
                changes.get("eval_distribute", self.eval_distribute),
                changes.pop("experimental_distribute", None))
            self._check_cluster(train)
            changes.update(train_distribute=train, eval_distribute=evaluate)
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

    def _check_cluster(self, train_distribute: Any) -> None:
        if train_distribute is not None:
            placement = self._placement
            check_cluster(train_distribute, placement.cluster,
                          f"{placement.task_type}:{placement.task_id}")

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
    train_distribute = property(lambda self: self._values["train_distribute"])
    eval_distribute = property(lambda self: self._values["eval_distribute"])

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

