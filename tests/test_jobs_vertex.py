"""trainexec/jobs/vertex.py: `render_vertex` called with shapes the `trainexec render
vertex` flags cannot describe (a master, roles with their own commands and environment,
a role with no command, a role of 0 replicas) and with site options on a job without
workers. tests/test_jobs_render.py covers the shapes and site flags of the command line.
"""

from __future__ import annotations

import pytest

from trainexec.jobs.shape import JobShape, Role
from trainexec.jobs.site_options import NfsMount, VertexOptions
from trainexec.jobs.vertex import render_vertex

pytestmark = pytest.mark.any_line

IMAGE = "gcr.io/p/train:3"


def _pools(shape: JobShape, options: VertexOptions = VertexOptions()) -> list[dict]:
    return render_vertex(shape, image=IMAGE, machine_type="n1-standard-4",
                         options=options)["jobSpec"]["workerPoolSpecs"]


def test_a_master_leads_from_pool_zero_as_a_chief_would():
    command = ("python", "m.py")
    shape = JobShape((Role("master", 1, command), Role("worker", 2, command)), name="legacy")
    job = render_vertex(shape, image=IMAGE, machine_type="n1-standard-4")
    assert job["displayName"] == "legacy"
    master, workers = job["jobSpec"]["workerPoolSpecs"]
    assert (master["replicaCount"], workers["replicaCount"]) == (1, 2)
    assert master["containerSpec"] == {"imageUri": IMAGE, "command": ["python"],
                                       "args": ["m.py"]}


def test_each_pool_runs_its_own_roles_command_and_environment_in_order():
    shape = JobShape((
        Role("evaluator", 1, ("python", "eval.py", "--once"), (("ROLE", "e"),)),
        Role("ps", 2, ("python", "ps.py"), (("ROLE", "p"), ("GRPC_VERBOSITY", "ERROR"))),
        Role("chief", 1, ("python", "train.py"), (("ROLE", "c"),)),
        Role("worker", 3, ("python3", "train.py", "--fast"), (("B", "2"), ("A", "1")))))
    chief, workers, ps, evaluator = _pools(shape)
    assert [p["replicaCount"] for p in (chief, workers, ps, evaluator)] == [1, 3, 2, 1]
    assert (chief["containerSpec"]["command"], chief["containerSpec"]["args"]) == (
        ["python"], ["train.py"])
    assert (workers["containerSpec"]["command"], workers["containerSpec"]["args"]) == (
        ["python3"], ["train.py", "--fast"])
    assert evaluator["containerSpec"]["args"] == ["eval.py", "--once"]
    # The environment keeps the order the role gives it, not sorted.
    assert workers["containerSpec"]["env"] == [{"name": "B", "value": "2"},
                                               {"name": "A", "value": "1"}]
    assert ps["containerSpec"]["env"] == [{"name": "ROLE", "value": "p"},
                                          {"name": "GRPC_VERBOSITY", "value": "ERROR"}]


def test_a_role_without_a_command_runs_the_images_entrypoint():
    shape = JobShape((Role("chief", 1, None), Role("worker", 1, ("train",))))
    chief, worker = _pools(shape)
    assert chief["containerSpec"] == {"imageUri": IMAGE}     # no command, no args
    assert worker["containerSpec"] == {"imageUri": IMAGE, "command": ["train"], "args": []}


def test_a_role_of_zero_replicas_is_an_empty_pool_in_the_middle_and_left_off_at_the_end():
    shape = JobShape((Role("chief", 1, ("x",)), Role("worker", 0, ("x",)), Role("ps", 1, ("x",)),
                      Role("evaluator", 0, ("x",))))
    pools = _pools(shape)
    assert len(pools) == 3
    assert pools[1] == {}
    assert (pools[0]["replicaCount"], pools[2]["replicaCount"]) == (1, 1)


def test_site_options_on_a_job_without_workers_leave_its_empty_pool_empty():
    shape = JobShape.from_counts(["python", "t.py"], workers=0, ps=1, evaluator=True)
    share = NfsMount("10.0.0.2", "/vol1", "runs")
    options = VertexOptions(accelerator_type="NVIDIA_TESLA_T4", accelerator_count=4,
                            nfs_mounts=(share,), service_account="sa@p.iam.gserviceaccount.com",
                            network="projects/1/global/networks/vpc")
    job = render_vertex(shape, image=IMAGE, machine_type="n1-standard-4", options=options)
    chief, workers, ps, evaluator = job["jobSpec"]["workerPoolSpecs"]
    assert workers == {}          # no accelerator, no share: Vertex's empty pool
    assert chief["machineSpec"] == {"machineType": "n1-standard-4",
                                    "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 4}
    for pool in (ps, evaluator):  # they do not train: no accelerator
        assert pool["machineSpec"] == {"machineType": "n1-standard-4"}
    for pool in (chief, ps, evaluator):
        assert pool["nfsMounts"] == [{"server": "10.0.0.2", "path": "/vol1",
                                      "mountPoint": "runs"}]
    assert (job["jobSpec"]["serviceAccount"], job["jobSpec"]["network"]) == (
        "sa@p.iam.gserviceaccount.com", "projects/1/global/networks/vpc")


def test_a_job_with_a_chief_of_zero_replicas_has_no_vertex_form():
    shape = JobShape((Role("chief", 0), Role("worker", 2, ("x",))))
    with pytest.raises(ValueError, match="a Vertex AI job needs a chief: worker pool 0"):
        render_vertex(shape, image=IMAGE, machine_type="n1-standard-4")
