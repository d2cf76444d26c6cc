"""trainexec/launch/gpus.py: each training task its own GPUs, the ps and the evaluator
none unless asked, shared round-robin (with memory growth) when there are too few, and
the line that says so. What the tasks really receive: tests/cluster/
test_launch_gpus_processes.py."""

from __future__ import annotations

import pytest

from trainexec.errors import ConfigError
from trainexec.jobs.shape import JobShape, Role
from trainexec.launch import LocalCluster
from trainexec.launch.gpus import assign, gpus_here, parse_jobs

pytestmark = pytest.mark.any_line

TASKS = [("chief", 0), ("worker", 0), ("ps", 0), ("evaluator", 0)]


def _seen(plan):
    return {task: env["CUDA_VISIBLE_DEVICES"] for task, env in plan.env.items()}


@pytest.mark.parametrize("gpus, per_task, jobs, seen", [
    pytest.param(["0", "1"], None, ("chief", "worker"),
                 {"chief:0": "0", "worker:0": "1", "ps:0": "", "evaluator:0": ""},
                 id="one each, ps and evaluator none"),
    pytest.param(["0", "1", "2", "3"], None, ("chief", "worker"),
                 {"chief:0": "0,1", "worker:0": "2,3", "ps:0": "", "evaluator:0": ""},
                 id="an equal share"),
    pytest.param(["0", "1", "2", "3"], 1, ("chief", "worker"),
                 {"chief:0": "0", "worker:0": "1", "ps:0": "", "evaluator:0": ""},
                 id="--gpus-per-task 1"),
    pytest.param(["0", "1", "2"], None, ("chief", "worker", "evaluator"),
                 {"chief:0": "0", "worker:0": "1", "ps:0": "", "evaluator:0": "2"},
                 id="the evaluator asked for"),
    pytest.param(["GPU-a", "GPU-b"], None, ("chief", "worker"),
                 {"chief:0": "GPU-a", "worker:0": "GPU-b", "ps:0": "", "evaluator:0": ""},
                 id="UUIDs as given"),
])
def test_each_training_task_gets_its_own(gpus, per_task, jobs, seen):
    plan = assign(TASKS, gpus, per_task=per_task, jobs=jobs, environ={})
    assert _seen(plan) == seen
    assert not plan.shared
    assert all("TF_FORCE_GPU_ALLOW_GROWTH" not in env for env in plan.env.values())


def test_too_few_gpus_are_shared_round_robin_with_memory_growth():
    tasks = [("chief", 0), ("worker", 0), ("worker", 1), ("evaluator", 0)]
    plan = assign(tasks, ["0", "1"], environ={})
    assert _seen(plan) == {"chief:0": "0", "worker:0": "1", "worker:1": "0",
                           "evaluator:0": ""}
    assert plan.env["worker:1"]["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    assert "shared round-robin" in plan.describe()
    # The user's own setting stands.
    mine = assign(tasks, ["0"], environ={"TF_FORCE_GPU_ALLOW_GROWTH": "false"})
    assert all("TF_FORCE_GPU_ALLOW_GROWTH" not in env for env in mine.env.values())


@pytest.mark.parametrize("gpus, per_task", [([], None), (["0", "1"], 0)],
                         ids=["no GPU", "--gpus-per-task 0"])
def test_nothing_is_set_or_said_without_gpus_or_with_zero(gpus, per_task):
    plan = assign(TASKS, gpus, per_task=per_task, environ={})
    assert plan.env == {} and plan.describe() is None


def test_the_line_says_who_got_what():
    plan = assign(TASKS, ["0", "1"], environ={})
    assert plan.describe() == ("GPUs (CUDA_VISIBLE_DEVICES): chief:0 GPU 0, worker:0 GPU 1; "
                               "ps:0, evaluator:0 none (--gpus-to names the jobs that get "
                               "some)")


@pytest.mark.parametrize("environ, devices, found", [
    ({"CUDA_VISIBLE_DEVICES": "0,1"}, ["0", "1", "2"], ["0", "1"]),
    ({"CUDA_VISIBLE_DEVICES": ""}, ["0"], []),
    ({"CUDA_VISIBLE_DEVICES": "-1"}, ["0"], []),
    ({"CUDA_VISIBLE_DEVICES": "1,-1,2"}, ["0"], ["1"]),
    ({}, ["0", "1"], ["0", "1"]),
    ({}, [], []),
])
def test_the_gpus_to_share(environ, devices, found):
    assert gpus_here(environ, devices=lambda: devices) == found


@pytest.mark.parametrize("bad", ["chief,wrker", ""])
def test_bad_jobs_are_named(bad):
    with pytest.raises(ConfigError, match="give job names among chief"):
        parse_jobs(bad)


def test_a_negative_count_is_refused():
    with pytest.raises(ConfigError, match="gpus per task is -1"):
        assign(TASKS, ["0"], per_task=-1)


def test_local_cluster_plans_the_same_and_a_roles_own_env_wins():
    cluster = LocalCluster(["true"], workers=1, evaluator=True,
                           env={"CUDA_VISIBLE_DEVICES": "3,4"})
    seen = {plan["task"]: plan["env"]["CUDA_VISIBLE_DEVICES"] for plan in cluster.plan()}
    assert seen == {"chief:0": "3", "worker:0": "4", "evaluator:0": ""}
    asked = LocalCluster(["true"], workers=1, evaluator=True, gpus=["0", "1", "2"],
                         gpus_to=("chief", "worker", "evaluator"))
    assert [p["env"]["CUDA_VISIBLE_DEVICES"] for p in asked.plan()] == ["0", "1", "2"]
    job = JobShape((Role("chief", 1, ("true",)),
                    Role("worker", 1, ("true",), env=(("CUDA_VISIBLE_DEVICES", "7"),))))
    from_manifest = LocalCluster.from_job(job, env={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert [p["env"]["CUDA_VISIBLE_DEVICES"] for p in from_manifest.plan()] == ["0", "7"]
