"""A TFJob's run policies: which ones a job's shape wants, and what they decide locally.

`cleanPodPolicy` says which pods the training operator deletes once the job has
finished (None, Running, All) and `successPolicy` when the job has succeeded:
"" (the default) when the chief or master exits 0, or worker 0 in a job
without either; `AllWorkers` (read only without a chief or master) when every
worker has.

`choose_policies(shape)` picks them for a job trainexec renders, with the
reasons (they go in the manifest as comments). trainexec's tasks all end by
themselves within seconds of the chief (ps and workers once training is over,
the evaluator after its final evaluation and export), so `cleanPodPolicy:
None` is safe, and it is the only policy that does not delete an evaluator
still finishing: the job succeeds when the chief does, while the evaluator
still evaluates the last checkpoint.

`local_success(shape, policies)` is what `trainexec launch --from` waits for:
the operator's success rule, plus the evaluators a `cleanPodPolicy: None`
leaves to finish (and the tasks that announce they end by themselves); with
Running or All those would be deleted on the cluster, and are stopped here.

Example:
    ```python
    choose_policies(JobShape.from_counts(cmd, workers=2, evaluator=True)).clean_pod_policy
    # "None"
    local_success(shape, RunPolicies()).wait_for   # ("chief:0", "evaluator:0")
    ```
"""

from __future__ import annotations

import dataclasses

from trainexec.jobs.shape import EXIT_CODE, JobShape
from trainexec.task_types import EVALUATOR, PS, WORKER

__all__ = ["ALL_WORKERS", "CLEAN_POD_POLICIES", "LOCAL_BACKOFF_LIMIT", "LocalSuccess",
           "RunPolicies", "SUCCESS_POLICIES", "choose_policies", "local_max_restarts",
           "local_success", "restart_policy_reason"]

CLEAN_POD_POLICIES = ("None", "Running", "All")
ALL_WORKERS = "AllWorkers"
SUCCESS_POLICIES = ("", ALL_WORKERS)


@dataclasses.dataclass(frozen=True)
class RunPolicies:
    """A TFJob's `runPolicy.cleanPodPolicy` and `successPolicy` (the operator's
    defaults: None and ""), and why each was chosen, in lines."""

    clean_pod_policy: str = "None"
    success_policy: str = ""
    clean_reasons: tuple[str, ...] = ()
    success_reasons: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class LocalSuccess:
    """What a local run of a TFJob waits for: `wait_for` must exit 0 (the operator's
    success rule, and the evaluators cleanPodPolicy None leaves to finish); with
    `wait_for_ending`, tasks that announce they end by themselves are waited for
    too. `summary` says so in one line."""

    wait_for: tuple[str, ...]
    wait_for_ending: bool
    summary: str


def choose_policies(shape: JobShape) -> RunPolicies:
    """The run policies for a trainexec job of this shape, with the reasons."""
    why_none = []
    if shape.count(EVALUATOR):
        why_none.append("the evaluator runs its final evaluation and export after training "
                        "ends: Running or All would delete it on the way and lose them")
    if shape.count(PS):
        why_none.append("trainexec's ps exit 0 once every training task has finished (a "
                        "plain TensorFlow ps would serve until the TFJob is deleted)")
    if shape.count(WORKER) and shape.leader:
        why_none.append("workers leave once training is over")
    reasons = ["cleanPodPolicy None: pods still running when the job succeeds are left to "
               "end by themselves, as trainexec's do within seconds"
               + (":" if why_none else ".")]
    reasons += [f"  {line}{';' if i < len(why_none) - 1 else '.'}"
                for i, line in enumerate(why_none)]
    if shape.leader:
        success = ""
        why = (f'successPolicy "": the job succeeds when the {shape.leader} exits 0, once '
               "training is over (AllWorkers is read only without a chief).")
    else:
        success = ALL_WORKERS
        why = ("successPolicy AllWorkers: without a chief every worker trains to the end, "
               'so the job succeeds when all have; "" would take worker 0 alone.')
    return RunPolicies("None", success, tuple(reasons), (why,))


def restart_policy_reason(restart_policy: str) -> str:
    """Why a replica restarts as it does, in a line (for the manifest's comment)."""
    if restart_policy == EXIT_CODE:
        return ("restartPolicy ExitCode: exits of 128 and up (143 preempted, 170 peer lost, "
                "171 server unavailable, 172 storage unavailable, 137 killed) restart the "
                "pod; 1 (the program raised), 2 (bad configuration) and 74 (storage "
                "failed: a full disk, no permission) fail the job, as trainexec's exit "
                "codes mean.")
    if restart_policy == "Never":
        return ("restartPolicy Never: no exit restarts the pod, not even a preemption "
                "(143) or a lost peer (170) that a restart would recover from.")
    return (f"restartPolicy {restart_policy}: every failure restarts the pod, even an exit "
            "1 or 2 that a restart repeats.")


def local_success(shape: JobShape, policies: RunPolicies) -> LocalSuccess:
    """The tasks a local run of a TFJob of `shape` waits for (see the module doc)."""
    if shape.leader:
        deciders = [f"{shape.leader}:{i}" for i in range(shape.count(shape.leader))]
        rule = f'successPolicy "": the {shape.leader} decides'
    elif policies.success_policy == ALL_WORKERS:
        deciders = [f"{WORKER}:{i}" for i in range(shape.count(WORKER))]
        rule = "successPolicy AllWorkers: every worker decides"
    else:
        deciders = [f"{WORKER}:0"] if shape.count(WORKER) else []
        rule = 'successPolicy "" without a chief: worker 0 decides'
    evaluators = [f"{EVALUATOR}:{i}" for i in range(shape.count(EVALUATOR))]
    left = policies.clean_pod_policy == "None"
    wait_for = tuple(deciders + (evaluators if left else []))
    if left:
        rest = ("cleanPodPolicy None leaves the other pods to end by themselves"
                + (f", so {' and '.join(evaluators)} must finish too" if evaluators else ""))
    else:
        rest = (f"cleanPodPolicy {policies.clean_pod_policy} deletes the pods still running "
                "then: stopped here too"
                + (f", {' and '.join(evaluators)} among them if not done" if evaluators else ""))
    summary = f"succeeds when {' and '.join(wait_for) or 'nothing'} exit 0 ({rule}; {rest})"
    return LocalSuccess(wait_for, left, summary)


# How often `trainexec launch --from` restarts a job whose manifest has no
# backoffLimit: Kubernetes Job's default backoffLimit.
LOCAL_BACKOFF_LIMIT = 6


def local_max_restarts(shape: JobShape, backoff_limit: int | None) -> tuple[int, str | None]:
    """The restarts a local run of a TFJob allows, and a note when trainexec chose them.

    The manifest's `runPolicy.backoffLimit` when given. Without it the operator
    puts no bound on restarts: a pod whose replica's restartPolicy is OnFailure,
    Always or ExitCode (a retryable exit) is restarted in place as often as it
    fails (kubelet's back-off only spaces them), so a local run restarts too,
    but up to `LOCAL_BACKOFF_LIMIT` times (Kubernetes Job's default
    backoffLimit), so that a job failing on every attempt still ends. Only
    replicas that are all `Never` get none.
    """
    if backoff_limit is not None:
        return backoff_limit, None
    policies = sorted({role.restart_policy for role in shape.roles if role.count})
    restarting = [p for p in policies if p != "Never"]
    if not restarting:
        return 0, None
    return LOCAL_BACKOFF_LIMIT, (
        f"no runPolicy.backoffLimit: the operator restarts {'/'.join(restarting)} replicas "
        f"without bound; this local run restarts up to {LOCAL_BACKOFF_LIMIT} times "
        "(Kubernetes Job's default backoffLimit) so that a job failing every time still "
        "ends: set backoffLimit in the manifest or pass --max-restarts to change it")
