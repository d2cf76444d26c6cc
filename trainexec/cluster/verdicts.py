"""What a TF_CONFIG cluster means to a user: which producer's shape it is, what
trainexec rewrote, a readable summary, and which trainers can train its shape.

`recognise(config)` names the producer whose TF_CONFIG shape the config has
(a Kubeflow TFJob, its enableDynamicWorker sparse form, SageMaker's parameter
server mode with a master, ...) and lists what trainexec rewrote on the way
(empty jobs dropped, sparse jobs kept as {index: address}, a master handed to
tf.distribute as chief). `explain(config)` is what `trainexec tfconfig` prints;
`trainer_support(config)` judges, from the shape alone, whether an Estimator
and a Keras trainer can train the cluster, naming the fix when not.
`trainexec tfconfig` adds what this installation can run (`trainexec.cli.installation`).
All of it is pure.

Example:
    ```python
    config = ClusterConfig.from_env()
    print(explain(config))
    recognise(config).producer  # "Kubeflow TFJob"
    trainer_support(config)   # {"Estimator": Support(True), "Keras": Support(True, "MultiWorkerMirroredStrategy")}
    ```
"""

from __future__ import annotations

import dataclasses
import re

from trainexec.cluster.config import ClusterConfig
from trainexec.cluster.parsing import DYNAMIC_WORKER_FIX
from trainexec.task_types import (CHIEF, ESTIMATOR, EVALUATOR, KERAS, MASTER, PS,
                                  TRAINER_TYPES, WORKER)

__all__ = ["GENERIC", "LOCAL_RUN", "MASTER_AS_CHIEF", "PRODUCERS",
           "SAGEMAKER_PARAMETER_SERVER", "SLURM", "TFJOB", "TFJOB_DYNAMIC_WORKER", "TRAINEXEC_LAUNCH",
           "WORKERS_ONLY", "ClusterShape", "Support",
           "estimator_support", "estimator_without_chief", "explain", "keras_support",
           "recognise", "rewrites", "run_config_fails_on", "trainer_support"]

# The producer shapes `recognise` tells apart.
TFJOB = "Kubeflow TFJob"
TFJOB_DYNAMIC_WORKER = "TFJob enableDynamicWorker (sparse)"
SAGEMAKER_PARAMETER_SERVER = "SageMaker parameter server (master)"
WORKERS_ONLY = "workers only"
TRAINEXEC_LAUNCH = "trainexec launch"
SLURM = "slurm"
GENERIC = "generic"
LOCAL_RUN = "local (no cluster)"
PRODUCERS = (TFJOB, TFJOB_DYNAMIC_WORKER, SAGEMAKER_PARAMETER_SERVER, WORKERS_ONLY,
             TRAINEXEC_LAUNCH, SLURM, GENERIC, LOCAL_RUN)

MASTER_AS_CHIEF = ("master:0 handed to tf.distribute as chief:0 by the Keras trainer "
                   "(tf.estimator keeps master)")
_SAGEMAKER_HOST = re.compile(r"^algo-[0-9]+:[0-9]+$")
_PARTIAL_VIEW = (
    "this task sees only part of the cluster (a job given as {index: address}: a TFJob "
    "with enableDynamicWorker: true) and its chief sees none of it, so no chief can "
    "lead training or save checkpoints; " + DYNAMIC_WORKER_FIX)


@dataclasses.dataclass(frozen=True)
class ClusterShape:
    """The producer whose TF_CONFIG shape a config has, and what trainexec rewrote.

    Attributes:
      producer: one of `PRODUCERS`.
      rewrites: one sentence per rewrite, empty when TF_CONFIG is used as given.
    """

    producer: str
    rewrites: tuple[str, ...] = ()


def recognise(config: ClusterConfig, launched: bool = False,
              slurm: bool = False) -> ClusterShape:
    """The shape of `config` (pure). `launched`: `trainexec launch` started this
    task (its environment has TRAINEXEC_LAUNCH_DIR); `slurm`: the cluster was
    built from a Slurm step (TRAINEXEC_SLURM_ROLES, no TF_CONFIG)."""
    if slurm and config.is_distributed:
        return ClusterShape(SLURM, rewrites(config) + (
            "cluster built from the Slurm step (TRAINEXEC_SLURM_ROLES, SLURM_PROCID, "
            "SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE, ports), no TF_CONFIG",))
    return ClusterShape(_producer(config, launched), rewrites(config))


def _producer(config: ClusterConfig, launched: bool) -> str:
    if not config.is_distributed and config.task_type is None:
        return LOCAL_RUN
    jobs = {*config.cluster, *config.sparse_jobs, *config.empty_jobs}
    if launched:
        return TRAINEXEC_LAUNCH
    if config.is_sparse and jobs <= {WORKER, PS} and config.environment is None:
        return TFJOB_DYNAMIC_WORKER
    if config.environment == "cloud" and _tfjob_service_names(config):
        return TFJOB
    addresses = [a for tasks in config.indexed_jobs.values() for _, a in tasks]
    if (MASTER in config.cluster and PS in config.cluster
            and not {CHIEF, EVALUATOR} & jobs
            and all(_SAGEMAKER_HOST.match(a) for a in addresses)):
        return SAGEMAKER_PARAMETER_SERVER
    if set(config.cluster) == {WORKER} and not config.is_sparse:
        return WORKERS_ONLY
    return GENERIC


def _tfjob_service_names(config: ClusterConfig) -> bool:
    """Every address is a TFJob service: <tfjob>-<type>-<index>.<namespace>.svc[.<domain>]."""
    named = [(job, index, address) for job, tasks in config.indexed_jobs.items()
             for index, address in tasks]
    return bool(named) and all(
        re.match(rf"^[a-z0-9][-a-z0-9]*-{re.escape(job)}-{index}\.[a-z0-9][-a-z0-9]*"
                 r"\.svc(\.[A-Za-z0-9.-]+)?:[0-9]+$", address)
        for job, index, address in named)


def rewrites(config: ClusterConfig) -> tuple[str, ...]:
    """What trainexec does to TF_CONFIG on the way (pure), one sentence each."""
    done = []
    if config.empty_jobs:
        done.append(f"empty jobs dropped (treated as absent): {', '.join(config.empty_jobs)}")
    for job, tasks in config.sparse_jobs.items():
        if (job == PS and config.task_type == PS and config.task_index is not None
                and list(tasks) == [config.task_index]):
            done.append(
                f'cluster.ps read as ps:{config.task_index}\'s own address only, '
                f'{{"{config.task_index}": "{tasks[config.task_index]}"}} (a TFJob ps '
                "with enableDynamicWorker sees only itself, whatever its index)")
        else:
            listed = ", ".join(f"{job}:{index}" for index in tasks)
            done.append(f"sparse cluster.{job} kept as {{index: address}}: this task "
                        f"sees only {listed}")
    evaluators = config.indexed_jobs.get(EVALUATOR, ())
    if evaluators:
        names = ", ".join(f"{EVALUATOR}:{index}" for index, _ in evaluators)
        done.append(f"{names} left out of the training cluster the servers and "
                    "tf.distribute are given (an evaluator only reads checkpoints)")
    if MASTER in config.cluster or MASTER in config.sparse_jobs:
        done.append(MASTER_AS_CHIEF)
    return tuple(done)


def explain(config: ClusterConfig, launched: bool = False, slurm: bool = False) -> str:
    """A human-readable summary of the cluster and this task's role: the producer
    shape recognised, and what trainexec rewrote (see `recognise`)."""
    if not config.is_distributed and config.task_type is None:
        return ("role: local (no cluster in TF_CONFIG): train and evaluate in "
                "this one process")
    shape = recognise(config, launched, slurm)
    lines = [f"recognised shape: {shape.producer}"]
    if config.is_distributed:
        lines.append(f"cluster ({config.rpc_layer}):")
        for job, tasks in config.indexed_jobs.items():
            for index, address in tasks:
                here = ""
                if job == config.task_type and index == config.task_index:
                    here = "   <- this task"
                lines.append(f"  {job + ':' + str(index):<12} {address}{here}")
    role = config.task_name
    facts = []
    if config.is_chief:
        facts.append("chief: saves checkpoints and records when training ends")
    if config.task_type == EVALUATOR:
        facts.append("evaluates new checkpoints; outside the training cluster")
    elif config.task_type == PS:
        facts.append("serves variables to the trainers until they have all finished")
    elif config.is_sparse and config.task_type in TRAINER_TYPES:
        facts.append("a training task")
    elif config.task_type in TRAINER_TYPES:
        facts.append(f"one of {config.num_workers} training tasks" if config.num_workers > 1
                     else "the only training task")
    if config.is_sparse:
        facts.append("sees only part of the cluster")
    lines.append(f"role: {role}" + (f" ({'; '.join(facts)})" if facts else ""))
    if config.environment:
        lines.append(f"environment: {config.environment}")
    if shape.rewrites:
        lines.append("rewrote:")
        lines.extend(f"  {rewrite}" for rewrite in shape.rewrites)
    else:
        lines.append("rewrote: nothing (TF_CONFIG used as given)")
    evaluators = len(config.cluster.get(EVALUATOR, ()))
    if evaluators > 1:
        lines.append(f"evaluators: only evaluator:0 runs ({evaluators} listed); set the "
                     "TFJob's Evaluator replicas to 1")
    support = trainer_support(config)
    if support:
        lines.append("trainers for this cluster:")
        lines.extend(f"  {trainer}: {verdict}" for trainer, verdict in support.items())
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Support:
    """Whether a trainer can train a cluster, as data.

    `trains`: it can; `detail`: how (the strategy; may be empty) or why not and the fix;
    `caveat`: what may still go wrong where it can. `str()` is the line `trainexec
    tfconfig` prints: "yes, how; but caveat" or "no: why".
    """

    trains: bool
    detail: str = ""
    caveat: str = ""

    def __str__(self) -> str:
        if not self.trains:
            return f"no: {self.detail}"
        return ("yes" + (f", {self.detail}" if self.detail else "")
                + (f"; {self.caveat}" if self.caveat else ""))


def trainer_support(config: ClusterConfig) -> dict[str, Support]:
    """Whether each trainer can train this cluster, judged from its shape alone.

    Maps "Estimator" and "Keras" to their `Support`. Empty when there is no training
    cluster (a local run, a lone evaluator).
    """
    if not config.training_cluster:
        return {}
    return {ESTIMATOR: estimator_support(config), KERAS: keras_support(config)}


def estimator_without_chief(config: ClusterConfig) -> str | None:
    """Why an Estimator cannot train `config` for want of a chief, and the fix; None when
    it has one. The one wording of that rule: `trainexec tfconfig` prints it, and an
    Estimator task of such a cluster fails with it (`EstimatorTrainer.plan_role`)."""
    if config.has_chief:
        return None
    missing = [job for job in (CHIEF, MASTER) if job in config.empty_jobs]
    return ('the cluster has no "chief" (or "master") job'
            + (f" (cluster.{missing[0]} is an empty list)" if missing else "")
            + ", and Estimator training needs one chief to save checkpoints; give the "
            'TFJob a Chief replica (replicas: 1), or add "chief": ["host:port"] to '
            "cluster; a cluster of workers only suits Keras MultiWorkerMirroredStrategy "
            "instead")


def estimator_support(config: ClusterConfig) -> Support:
    """Whether an Estimator can train this cluster."""
    if config.is_sparse:
        return Support(False, _PARTIAL_VIEW)
    without_chief = estimator_without_chief(config)
    if without_chief:
        return Support(False, without_chief)
    how = ""
    if MASTER in config.cluster:
        how = "master:0 trains and evaluates after checkpoint saves" + (
            " (no evaluator can run beside a master: rename the TFJob's Master to Chief "
            "to keep one)" if EVALUATOR in config.cluster else "")
    trap = run_config_fails_on(config)
    caveat = (f"but TF 2.15's tf.estimator.RunConfig fails for {config.task_name} "
              f'on the empty cluster.{trap} ("max() arg is an empty sequence"): '
              'first run export TF_CONFIG="$(trainexec tfconfig --json)", '
              "or remove the replica spec with 0 replicas") if trap else ""
    return Support(True, how, caveat)


def keras_support(config: ClusterConfig) -> Support:
    """Whether a Keras trainer can train this cluster, and with which strategy.

    A master is handed to tf.distribute as the chief (`MASTER_AS_CHIEF`).
    """
    if config.is_sparse:
        return Support(False, _PARTIAL_VIEW)
    master = MASTER in config.cluster
    as_chief = " (handed to tf.distribute as chief:0)" if master else ""
    if master and EVALUATOR in config.cluster:
        as_chief += ("; no evaluator can run beside a master: rename the TFJob's Master "
                     "to Chief to keep one")
    if PS in config.cluster:
        if not config.has_chief:
            return Support(False, 'ParameterServerStrategy (the cluster has ps) needs a '
                                  '"chief" to coordinate; add a Chief replica (replicas: 1)')
        if WORKER not in config.cluster:
            return Support(False, "ParameterServerStrategy (the cluster has ps) needs at "
                                  "least one worker; give the TFJob's Worker 1 or more "
                                  "replicas")
        lead = MASTER if master else CHIEF
        return Support(True, f"ParameterServerStrategy; {lead}:0 coordinates{as_chief}")
    if config.has_chief:
        return Support(True, "MultiWorkerMirroredStrategy"
                             f"{'; master:0 leads' if master else ''}{as_chief}")
    return Support(True, "MultiWorkerMirroredStrategy; worker:0 acts as chief")


def run_config_fails_on(config: ClusterConfig) -> str | None:
    """The empty job on which TF 2.15's `tf.estimator.RunConfig` fails for this
    task, built from this TF_CONFIG as given; None when it does not fail.

    RunConfig numbers the tasks by walking the jobs (chief or master first,
    then the others alphabetically, ps last) up to this task's job, and
    raises on an empty job it passes. The chief (or master) and the
    evaluator are never affected, nor is any task once the empty jobs are
    left out of TF_CONFIG (see `ClusterConfig.to_json`).
    """
    if not config.empty_jobs or config.task_type in (None, EVALUATOR):
        return None
    jobs = {*config.cluster, *config.empty_jobs}
    lead = MASTER if MASTER in jobs else CHIEF
    for job in (lead, *sorted(jobs - {lead, PS}), PS):
        if job == config.task_type:
            return None
        if job in config.empty_jobs:
            return job
    return None
