"""trainexec/launch/cluster_plan.py: a typed plan, frozen and holding task specs only; a
LocalCluster makes its runtime tasks from it, on its clock. No processes are started."""

import dataclasses
import typing

import pytest

from launch_fakes import FakeClock
from trainexec.jobs.shape import JobShape
from trainexec.launch.cluster import LocalCluster
from trainexec.launch.cluster_plan import ClusterPlan
from trainexec.launch.task import Task, TaskSpec

pytestmark = pytest.mark.any_line


def _plan() -> ClusterPlan:
    job = JobShape.from_counts(["prog"], workers=1, ps=1, evaluator=True, chief=True)
    return ClusterPlan.build(job, "launch", host="127.0.0.1", env={"A": "1"},
                             wait_for=["chief"], restart_groups=[["chief", "worker"]],
                             restart_policy="OnFailure")


def test_every_field_is_typed():
    hints = typing.get_type_hints(ClusterPlan)
    assert typing.Any not in hints.values(), hints


def test_the_plan_holds_specs_and_nothing_that_changes():
    plan = _plan()
    assert [type(t) for t in plan.tasks] == [TaskSpec] * 4
    assert [t.name for t in plan.tasks] == ["chief:0", "worker:0", "ps:0", "evaluator:0"]
    assert plan.primary == ("chief:0",)
    assert plan.restart_groups == (("chief:0", "worker:0"),)
    assert dict(plan.restart_policies) == dict.fromkeys(
        ["chief:0", "worker:0", "ps:0", "evaluator:0"], "OnFailure")
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.tasks[0].tf_config = None
    with pytest.raises(TypeError):
        plan.restart_policies["chief:0"] = "Never"
    with pytest.raises(TypeError):
        plan.tasks[0].env["B"] = "2"
    assert plan.added_env(plan.tasks[0])["A"] == "1"


def test_a_cluster_makes_its_tasks_from_the_plan_on_its_clock():
    clock = FakeClock(50.0)
    cluster = LocalCluster(["prog"], workers=1, evaluator=True, clock=clock)
    assert [t.name for t in cluster.tasks] == [p["task"] for p in cluster.plan()]
    assert all(type(t) is Task and t.clock is clock and t.run.proc is None
               for t in cluster.tasks)
    assert cluster.primary == ["chief:0", "evaluator:0"]  # the public lists stay lists
    assert cluster.restart_groups == [] and isinstance(cluster.restart_policies, dict)
    task = cluster.tasks[0]
    task.started_at, task.ended_at = 50.0, 52.5
    assert task.run_secs == 2.5


def test_a_task_from_a_spec_has_its_own_copy_of_the_spec_s_environment():
    spec = TaskSpec("worker", 1, "{}", "127.0.0.1:2222", ("prog", "--x"), {"A": "1"})
    task = Task.from_spec(spec)
    assert (task.name, task.tf_config, task.address, task.command) == (
        "worker:1", "{}", "127.0.0.1:2222", ("prog", "--x"))
    task.env["B"] = "2"
    assert dict(spec.env) == {"A": "1"}
