"""The cluster model: TF_CONFIG -> `ClusterConfig`, what a shape can train, a task's server.

* `config`: `ClusterConfig`, the cluster as one process sees it, and the role it gives;
* `parsing`: reading TF_CONFIG, every malformed input a `ConfigError` naming the field;
* `verdicts`: what a cluster means to a user (its producer, which trainers can train it);
* `slurm`: the cluster of a Slurm job step, built from Slurm's environment;
* `server`: starting a task's standard TensorFlow server, and the workers' start delays;
* `keepalive`: gRPC keepalive on a parameter-server job's channels, so a peer cut off or
  frozen is noticed in bounded time (Keras's ParameterServerStrategy, an Estimator's ps);
* the task-type names (chief, worker, master, ps, evaluator) are `trainexec.task_types`'s,
  below the cluster model (the job specs use them too).

`from trainexec.cluster import ClusterConfig` (and the task-type names) keeps working:
they are re-exported from `config`, imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainexec.lazy_exports import lazy_exports

if TYPE_CHECKING:  # what the names below are, for type checkers and editors (never run)
    from trainexec.cluster.config import ClusterConfig
    from trainexec.task_types import (CHIEF, ESTIMATOR, EVALUATOR, KERAS, LOCAL, MASTER,
                                      PS, WORKER)

__all__ = ["CHIEF", "ClusterConfig", "ESTIMATOR", "EVALUATOR", "KERAS", "LOCAL", "MASTER",
           "PS", "WORKER"]

if not TYPE_CHECKING:  # checkers see the imports above: a misspelt name is an error there
    __getattr__, __dir__ = lazy_exports(
        __name__, {name: "trainexec.cluster.config" for name in __all__}, globals())
