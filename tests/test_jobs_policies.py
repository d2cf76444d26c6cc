"""trainexec/jobs/policies.py: the run policies chosen for a shape and what a local run of
the TFJob then waits for, the reasons written as the manifest's comments (the restart
policy's against trainexec's exit codes), and how often a local run restarts a job whose
manifest gives no backoffLimit. tests/test_jobs_shape.py has the policy tables.
"""

from __future__ import annotations

import pytest

from trainexec.contract.exit_codes import (CONFIG_ERROR, PEER_LOST, PREEMPTED,
                                           SERVER_UNAVAILABLE, STORAGE_FAILED,
                                           STORAGE_UNAVAILABLE, USER_ERROR, ExitCodes)
from trainexec.jobs.policies import (RunPolicies, choose_policies, local_max_restarts,
                                     local_success, restart_policy_reason)
from trainexec.jobs.shape import JobShape, Role

pytestmark = pytest.mark.any_line

# Kubernetes Job's default backoffLimit, which a local run borrows.
KUBERNETES_DEFAULT_BACKOFF = 6


def _shape(chief=True, workers=1, ps=0, evaluator=False):
    return JobShape.from_counts(["python", "t.py"], workers=workers, ps=ps,
                                evaluator=evaluator, chief=chief, name="demo")


@pytest.mark.parametrize("shape, wait_for", [
    (_shape(workers=2, evaluator=True), ("chief:0", "evaluator:0")),
    (_shape(chief=False, workers=3, evaluator=True),
     ("worker:0", "worker:1", "worker:2", "evaluator:0")),
    (JobShape((Role("master"), Role("worker", 2), Role("ps", 1))), ("master:0",)),
])
def test_the_chosen_policies_make_a_local_run_wait_for_what_the_cluster_would(shape, wait_for):
    decided = local_success(shape, choose_policies(shape))
    assert decided.wait_for == wait_for
    assert decided.wait_for_ending  # cleanPodPolicy None: the rest end by themselves


def test_the_clean_pod_reason_is_one_sentence_with_a_line_per_role_it_waits_for():
    reasons = choose_policies(_shape(workers=2, ps=1, evaluator=True)).clean_reasons
    head, *lines = reasons
    assert head.startswith("cleanPodPolicy None: ") and head.endswith(":")
    assert [line.split()[0:2] for line in lines] == [
        ["the", "evaluator"], ["trainexec's", "ps"], ["workers", "leave"]]
    assert all(line.startswith("  ") for line in lines)
    assert [line[-1] for line in lines] == [";", ";", "."]
    # With no role to explain, the sentence ends there.
    (only,) = choose_policies(_shape(workers=0)).clean_reasons
    assert only.startswith("cleanPodPolicy None: ") and only.endswith("within seconds.")


def test_without_a_chief_workers_are_not_said_to_leave_and_all_of_them_decide():
    policies = choose_policies(_shape(chief=False, workers=2, ps=1))
    text = " ".join(policies.clean_reasons)
    assert "trainexec's ps exit 0" in text and "workers leave" not in text
    assert policies.success_policy == "AllWorkers"


def test_a_master_led_job_succeeds_when_the_master_exits_0():
    policies = choose_policies(JobShape((Role("master"), Role("worker", 2))))
    assert policies.success_policy == ""
    (reason,) = policies.success_reasons
    assert "the job succeeds when the master exits 0" in reason


def test_the_exit_code_reason_agrees_with_trainexecs_exit_codes():
    reason = restart_policy_reason("ExitCode")
    codes = ExitCodes()
    assert "exits of 128 and up" in reason and "restart the pod" in reason
    for cause in (PREEMPTED, PEER_LOST, SERVER_UNAVAILABLE, STORAGE_UNAVAILABLE):
        code = codes.code_for(cause)
        assert f"{code} {cause.replace('_', ' ')}" in reason
        assert code >= 128 and codes.is_retryable(code)
    assert "137 killed" in reason and codes.is_retryable(128 + 9)   # SIGKILL
    for cause, said in ((USER_ERROR, "the program raised"), (CONFIG_ERROR, "bad configuration"),
                        (STORAGE_FAILED, "storage failed")):
        code = codes.code_for(cause)
        assert f"{code} ({said}" in reason and not codes.is_retryable(code)
    assert "fail the job" in reason


@pytest.mark.parametrize("policy", ["OnFailure", "Always"])
def test_other_restart_policies_are_said_to_restart_every_failure(policy):
    reason = restart_policy_reason(policy)
    assert reason.startswith(f"restartPolicy {policy}: every failure restarts the pod")
    assert "even an exit 1 or 2" in reason


def test_never_is_said_to_restart_nothing():
    reason = restart_policy_reason("Never")
    assert reason.startswith("restartPolicy Never: no exit restarts the pod")
    assert "every failure restarts" not in reason


def test_a_manifests_backoff_limit_is_taken_as_given_without_a_note():
    shape = _shape(workers=2)
    assert local_max_restarts(shape, 0) == (0, None)
    assert local_max_restarts(shape, 3) == (3, None)


def test_without_a_backoff_limit_restarting_replicas_get_kubernetes_default_and_a_note():
    shape = JobShape((Role("chief", restart_policy="ExitCode"),
                      Role("worker", 2, restart_policy="OnFailure"),
                      Role("ps", 1, restart_policy="Never")))
    restarts, note = local_max_restarts(shape, None)
    assert restarts == KUBERNETES_DEFAULT_BACKOFF
    assert note.startswith("no runPolicy.backoffLimit: the operator restarts "
                           "ExitCode/OnFailure replicas without bound")
    assert "Never" not in note
    assert "set backoffLimit in the manifest or pass --max-restarts" in note


def test_a_job_whose_replicas_never_restart_gets_no_restarts():
    never = JobShape((Role("chief", restart_policy="Never"),
                      Role("worker", 0, restart_policy="OnFailure")))  # no pod: not read
    assert local_max_restarts(never, None) == (0, None)


@pytest.mark.parametrize("clean, words", [
    ("None", "cleanPodPolicy None leaves the other pods to end by themselves, so "
             "evaluator:0 must finish too"),
    ("All", "cleanPodPolicy All deletes the pods still running then: stopped here too, "
            "evaluator:0 among them if not done"),
])
def test_the_local_summary_says_what_happens_to_the_evaluator(clean, words):
    summary = local_success(_shape(evaluator=True), RunPolicies(clean)).summary
    assert summary.startswith("succeeds when chief:0")
    assert words in summary
