"""What a TF_CONFIG cluster means to a user: a readable summary, and which trainers
can train its shape.

`explain(config)` is what `trainexec tfconfig` prints; `trainer_support(config)`
judges, from the shape alone, whether an Estimator and a Keras trainer can
train the cluster, naming the fix when not. `trainexec.installation` adds what
this machine can run.

Example::

    config = ClusterConfig.from_env()
    print(explain(config))
    trainer_support(config)   # {"Estimator": "yes", "Keras": "yes, MultiWorkerMirroredStrategy"}
"""

from __future__ import annotations

from trainexec.cluster import ClusterConfig
from trainexec.task_types import (CHIEF, ESTIMATOR, EVALUATOR, KERAS, MASTER, PS,
                                  TRAINER_TYPES, WORKER)

__all__ = ["estimator_support", "explain", "keras_support", "run_config_fails_on",
           "trainer_support"]


def explain(config: ClusterConfig) -> str:
    """A human-readable summary of the cluster and this task's role."""
    if not config.cluster and config.task_type is None:
        return ("role: local (no cluster in TF_CONFIG): train and evaluate in "
                "this one process")
    lines = []
    if config.cluster:
        lines.append(f"cluster ({config.rpc_layer}):")
        for job, addresses in config.cluster.items():
            for index, address in enumerate(addresses):
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
    elif config.task_type in TRAINER_TYPES:
        facts.append(f"one of {config.num_workers} training tasks" if config.num_workers > 1
                     else "the only training task")
    lines.append(f"role: {role}" + (f" ({'; '.join(facts)})" if facts else ""))
    if config.environment:
        lines.append(f"environment: {config.environment}")
    if config.empty_jobs:
        lines.append(f"empty jobs (treated as absent): {', '.join(config.empty_jobs)}")
    evaluators = len(config.cluster.get(EVALUATOR, ()))
    if evaluators > 1:
        lines.append(f"evaluators: only evaluator:0 runs ({evaluators} listed); set the "
                     "TFJob's Evaluator replicas to 1")
    support = trainer_support(config)
    if support:
        lines.append("trainers for this cluster:")
        lines.extend(f"  {trainer}: {verdict}" for trainer, verdict in support.items())
    return "\n".join(lines)


def trainer_support(config: ClusterConfig) -> dict[str, str]:
    """Whether each trainer can train this cluster, judged from its shape alone.

    Maps "Estimator" and "Keras" to "yes, how" or "no: why; the fix".
    Empty when there is no training cluster (a local run, a lone evaluator).
    """
    if not config.training_cluster:
        return {}
    return {ESTIMATOR: estimator_support(config), KERAS: keras_support(config)}


def estimator_support(config: ClusterConfig) -> str:
    """Whether an Estimator can train this cluster: "yes..." or "no: why; the fix"."""
    if not config.has_chief:
        missing = [job for job in (CHIEF, MASTER) if job in config.empty_jobs]
        why = (f"cluster.{missing[0]} is an empty list" if missing
               else 'the cluster has no "chief" (or "master") job')
        return (f"no: {why}, and Estimator training needs one chief to save "
                "checkpoints; give the TFJob a Chief replica (replicas: 1), or add "
                '"chief": ["host:port"] to cluster')
    verdict = "yes"
    if MASTER in config.cluster:
        verdict += ", master:0 trains and evaluates after checkpoint saves"
        if EVALUATOR in config.cluster:
            verdict += (" (no evaluator can run beside a master: rename the TFJob's "
                        "Master to Chief to keep one)")
    trap = run_config_fails_on(config)
    if trap:
        verdict += (f"; but TF 2.15's tf.estimator.RunConfig fails for {config.task_name} "
                    f'on the empty cluster.{trap} ("max() arg is an empty sequence"): '
                    'first run export TF_CONFIG="$(trainexec tfconfig --json)", '
                    "or remove the replica spec with 0 replicas")
    return verdict


def keras_support(config: ClusterConfig) -> str:
    """Whether a Keras trainer can train this cluster: "yes, <strategy>" or "no: ..."."""
    if MASTER in config.cluster:
        return ('no: tf.distribute has no "master" job; rename it "chief" (TFJob: a '
                "Chief replica spec instead of Master)")
    if PS in config.cluster:
        if CHIEF not in config.cluster:
            return ('no: ParameterServerStrategy (the cluster has ps) needs a "chief" '
                    "to coordinate; add a Chief replica (replicas: 1)")
        if WORKER not in config.cluster:
            return ("no: ParameterServerStrategy (the cluster has ps) needs at least "
                    "one worker; give the TFJob's Worker 1 or more replicas")
        return "yes, ParameterServerStrategy; chief:0 coordinates"
    if CHIEF in config.cluster:
        return "yes, MultiWorkerMirroredStrategy"
    return "yes, MultiWorkerMirroredStrategy; worker:0 acts as chief"


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
