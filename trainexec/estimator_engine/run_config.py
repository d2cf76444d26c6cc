"""`RunConfig`: where an Estimator writes, how often it saves, and which task it is.

The common fields of `tf.estimator.RunConfig`, with its defaults (checkpoints every
600 s unless `save_checkpoints_steps` is given, 5 kept, summaries and step-rate logs
every 100 steps). The cluster and this task come from `TF_CONFIG`, read once when
the RunConfig is built, through trainexec's `ClusterConfig` (a malformed TF_CONFIG is
a `ConfigError` naming the field and the fix), and give what tf.estimator's
RunConfig gives: `task_type`, `task_id`, `cluster_spec`, `master`, `is_chief`,
`num_ps_replicas`, `num_worker_replicas`, and a session config whose device filters
let a worker see only the ps and itself.

`train_distribute` / `eval_distribute` are refused: they run through TensorFlow's
private distribute coordinator. Distribution strategies are `trainexec.KerasTrainer`'s.

Example:
    ```python
    config = RunConfig(model_dir="/tmp/m", save_checkpoints_steps=100,
                       keep_checkpoint_max=3, tf_random_seed=7)
    config.is_chief, config.task_type           # (True, "worker") without TF_CONFIG
    ```
"""

from __future__ import annotations

import copy
import numbers
from typing import Any, Mapping

from trainexec.cluster.config import CHIEF, EVALUATOR, MASTER, PS, WORKER, ClusterConfig
from trainexec.errors import ConfigError

__all__ = ["RunConfig"]

_DEFAULT = object()  # "not given": save_checkpoints_secs defaults to 600 then
_DEFAULT_SAVE_SECS = 600

_FIELDS = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
           "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
           "keep_checkpoint_every_n_hours", "log_step_count_steps", "device_fn",
           "protocol", "experimental_max_worker_delay_secs",
           "session_creation_timeout_secs", "checkpoint_save_graph_def")


def _check_count(field: str, value: Any, allow_zero: bool = False,
                 allow_none: bool = True) -> None:
    if value is None and allow_none:
        return
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"RunConfig `{field}` ({value!r}) must be an integer >= {low}"
                         + (" or None" if allow_none else ""))


def _check_secs(field: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
        raise ValueError(f"RunConfig `{field}` ({value!r}) must be a number of seconds "
                         ">= 0 or None")


class RunConfig:
    """The run settings of an `Estimator` (module doc); read-only, `replace()` for a
    changed copy."""

    def __init__(self, model_dir: str | None = None, tf_random_seed: int | None = None,
                 save_summary_steps: int | None = 100, save_checkpoints_steps: Any = _DEFAULT,
                 save_checkpoints_secs: Any = _DEFAULT, session_config: Any = None,
                 keep_checkpoint_max: int | None = 5,
                 keep_checkpoint_every_n_hours: float = 10000,
                 log_step_count_steps: int | None = 100, train_distribute: Any = None,
                 device_fn: Any = None, protocol: str | None = None,
                 eval_distribute: Any = None, experimental_distribute: Any = None,
                 experimental_max_worker_delay_secs: float | None = None,
                 session_creation_timeout_secs: float = 7200,
                 checkpoint_save_graph_def: bool = True,
                 cluster: ClusterConfig | None = None) -> None:
        for field, value in (("train_distribute", train_distribute),
                             ("eval_distribute", eval_distribute),
                             ("experimental_distribute", experimental_distribute)):
            if value is not None:
                raise ConfigError(
                    f"RunConfig `{field}` ({type(value).__name__}) is not supported by "
                    "trainexec.estimator: tf.estimator ran it through TensorFlow's private "
                    "distribute coordinator. Leave it unset for parameter-server "
                    "(between-graph) training, or train a Keras model with "
                    "trainexec.KerasTrainer, which takes MultiWorkerMirroredStrategy or "
                    "ParameterServerStrategy from TF_CONFIG")
        steps_given = save_checkpoints_steps is not _DEFAULT
        secs_given = save_checkpoints_secs is not _DEFAULT
        steps = save_checkpoints_steps if steps_given else None
        secs = save_checkpoints_secs if secs_given else None
        if steps is not None and secs is not None:
            raise ValueError(
                f"RunConfig: save_checkpoints_steps ({steps}) and save_checkpoints_secs "
                f"({secs}) cannot both be set: give one of them")
        if not steps_given and not secs_given:
            secs = _DEFAULT_SAVE_SECS
        _check_count("save_checkpoints_steps", steps, allow_zero=True)
        _check_secs("save_checkpoints_secs", secs)
        _check_count("save_summary_steps", save_summary_steps, allow_zero=True)
        _check_count("keep_checkpoint_max", keep_checkpoint_max, allow_zero=True)
        _check_count("log_step_count_steps", log_step_count_steps)
        _check_secs("keep_checkpoint_every_n_hours", keep_checkpoint_every_n_hours)
        _check_secs("experimental_max_worker_delay_secs", experimental_max_worker_delay_secs)
        if tf_random_seed is not None and (isinstance(tf_random_seed, bool)
                                           or not isinstance(tf_random_seed, numbers.Integral)):
            raise ValueError(f"RunConfig `tf_random_seed` ({tf_random_seed!r}) must be an "
                             "integer or None")
        if model_dir is not None and not isinstance(model_dir, str):
            model_dir = str(model_dir)  # a pathlib.Path
        if model_dir == "":
            raise ValueError("RunConfig `model_dir` is empty: give a directory, or None for "
                             "a temporary one")
        self._values: dict[str, Any] = dict(
            model_dir=model_dir, tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps, save_checkpoints_steps=steps,
            save_checkpoints_secs=secs, session_config=session_config,
            keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps, device_fn=device_fn,
            protocol=protocol,
            experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
            session_creation_timeout_secs=session_creation_timeout_secs,
            checkpoint_save_graph_def=checkpoint_save_graph_def)
        self._cluster = cluster if cluster is not None else ClusterConfig.from_env()

    def replace(self, **changes: Any) -> "RunConfig":
        """A copy with `changes` (any of the constructor's fields but the cluster)."""
        for field in ("train_distribute", "eval_distribute", "experimental_distribute"):
            if field in changes:
                if changes.pop(field) is not None:  # refused, with the constructor's words
                    RunConfig(cluster=self._cluster, **{field: object()})
        unknown = sorted(set(changes) - set(_FIELDS))
        if unknown:
            raise ValueError(f"RunConfig.replace: {', '.join(unknown)} cannot be replaced; "
                             f"the fields are {', '.join(_FIELDS)}")
        values = dict(self._values)
        # Setting one way of saving turns the other off, as in tf.estimator.
        if changes.get("save_checkpoints_steps") is not None and \
                "save_checkpoints_secs" not in changes:
            values["save_checkpoints_secs"] = None
        if changes.get("save_checkpoints_secs") is not None and \
                "save_checkpoints_steps" not in changes:
            values["save_checkpoints_steps"] = None
        values.update(changes)
        checked = RunConfig(cluster=self._cluster, **values)
        # This object's copy, as tf.estimator's replace gave: a subclass (and attributes
        # set on the instance) survive the Estimator setting its model_dir.
        replaced = copy.copy(self)
        vars(replaced).update(vars(checked))
        return replaced

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self._values.items()
                           if k != "session_config")
        return f"RunConfig({fields}, task={self._cluster.task_name})"

    # -- the fields ---------------------------------------------------------------------
    model_dir = property(lambda self: self._values["model_dir"])
    tf_random_seed = property(lambda self: self._values["tf_random_seed"])
    save_summary_steps = property(lambda self: self._values["save_summary_steps"])
    save_checkpoints_steps = property(lambda self: self._values["save_checkpoints_steps"])
    save_checkpoints_secs = property(lambda self: self._values["save_checkpoints_secs"])
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

    # -- the cluster (from TF_CONFIG) ---------------------------------------------------
    @property
    def cluster(self) -> ClusterConfig:
        """This task's cluster, as trainexec read TF_CONFIG."""
        return self._cluster

    @property
    def task_type(self) -> str:
        return self._cluster.task_type or WORKER

    @property
    def task_id(self) -> int:
        return self._cluster.task_index or 0

    @property
    def cluster_spec(self) -> Any:
        """The training cluster as a `tf.train.ClusterSpec` (empty on the evaluator and
        in a local run, as tf.estimator's)."""
        import tensorflow as tf

        if self._cluster.task_type == EVALUATOR or not self._cluster.is_distributed:
            return tf.train.ClusterSpec({})
        return tf.train.ClusterSpec(self._cluster.training_cluster)

    @property
    def is_chief(self) -> bool:
        if self._cluster.task_type == EVALUATOR:
            return False
        return self._cluster.is_chief

    @property
    def master(self) -> str:
        """The session target: this task's server, or "" (in-process) for a local run,
        a one-task cluster and the evaluator."""
        cluster = self._cluster
        if (cluster.task_type in (None, EVALUATOR) or not cluster.is_distributed
                or cluster.is_single_node or cluster.task_address is None):
            return ""
        return f"{cluster.rpc_layer or 'grpc'}://{cluster.task_address}"

    @property
    def evaluation_master(self) -> str:
        return ""

    @property
    def num_ps_replicas(self) -> int:
        return 0 if self._cluster.task_type == EVALUATOR else self._cluster.num_ps

    @property
    def num_worker_replicas(self) -> int:
        if self._cluster.task_type == EVALUATOR:
            return 0
        return self._cluster.num_workers

    @property
    def global_id_in_cluster(self) -> int:
        """This training task's number among chief, master, workers (then ps)."""
        order = [CHIEF, MASTER, WORKER, PS]
        jobs = self._cluster.indexed_jobs
        number = 0
        for job in order:
            for index, _ in jobs.get(job, ()):
                if (job, index) == (self.task_type, self.task_id):
                    return number
                number += 1
        return 0

    @property
    def session_config(self) -> Any:
        """The user's session config, or tf.estimator's default (soft placement; on a
        cluster, device filters: the ps and this task only)."""
        given = self._values["session_config"]
        if given is not None:
            return given
        import tensorflow as tf

        config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
        config.graph_options.rewrite_options.meta_optimizer_iterations = 1  # ONE
        cluster = self._cluster
        if cluster.is_distributed and cluster.task_type in (CHIEF, MASTER, WORKER):
            config.device_filters.extend(
                ["/job:ps", f"/job:{cluster.task_type}/task:{cluster.task_index}"])
        return config

    def as_dict(self) -> Mapping[str, Any]:
        """The constructor's fields and their values."""
        return dict(self._values)
