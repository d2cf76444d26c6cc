"""A real Slurm (trainexec/testing/slurm.py: munged, slurmctld, slurmd on n9, n10, n11, each
in its own network namespace): the step's cluster, rendered batch scripts running the demo
Keras jobs, and faults. Root and Slurm only; the fault rows run when -m names `slurm`.

Each job row prints its wall time (`-s` shows them); the bounds only catch hangs.
"""

import glob
import json
import os
import subprocess
import sys
import time

import pytest

from trainexec.contract.slurm_outcome import read_verdicts
from trainexec.testing.slurm import PREFIX, SlurmBed, unavailable

pytestmark = [pytest.mark.any_line, pytest.mark.cluster, pytest.mark.slurm]

WHY_NOT = unavailable()
needs_slurm = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASK_ENV = {"PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2"}
SHOW = ("import json, os; print(json.dumps({'node': os.uname().nodename, "
        "'tf_config': json.loads(os.environ['TF_CONFIG'])}))")


def _left_behind() -> list[str]:
    mine = f"{PREFIX}{os.getpid()}"
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    daemons = subprocess.run(["pgrep", "-a", "-x", "slurmctld|slurmd|munged|slurmstepd"],
                             capture_output=True, text=True).stdout
    return ([n for n in names.split() if n.startswith(mine)]
            + [line for line in links.splitlines() if f" {mine}" in line]
            + daemons.splitlines())


@pytest.fixture(scope="module")
def slurm_bed():
    """One Slurm for the module's tests (its daemons take seconds to start); removed
    with everything it made when the module ends, also after a failure."""
    if WHY_NOT is not None:
        pytest.skip(WHY_NOT)
    with SlurmBed() as slurm:
        yield slurm
    assert _left_behind() == []


@pytest.fixture
def bed(slurm_bed):
    """The module's Slurm, reset for this test: no job, every node up and idle."""
    slurm_bed.reset()
    return slurm_bed


# -- the step's cluster ---------------------------------------------------------------------
@needs_slurm
def test_srun_gives_every_task_its_role_and_its_own_nodes_address(bed):
    result = bed.run(["srun", "--nodes=3", "--ntasks=6", "--ntasks-per-node=2",
                      "--distribution=block",
                      sys.executable, "-m", "trainexec", "slurm-exec", "--",
                      sys.executable, "-c", SHOW],
                     env={**TASK_ENV, "TRAINEXEC_SLURM_ROLES": "ps=1,worker=3,chief=1,"
                          "evaluator=1"})
    assert result.returncode == 0, result.stderr
    seen = [json.loads(line) for line in result.stdout.splitlines()]
    cluster = seen[0]["tf_config"]["cluster"]
    # Block: n9 runs ranks 0-1, n10 ranks 2-3, n11 ranks 4-5; roles in trainexec's order
    # (TF's resolver would make rank 1 the ps), nodes in Slurm's (n9 before n10).
    assert [a.split(":")[0] for a in cluster["chief"] + cluster["worker"] + cluster["ps"]
            + cluster["evaluator"]] == ["n9", "n9", "n10", "n10", "n11", "n11"]
    ports = [int(a.split(":")[1]) for a in cluster["chief"] + cluster["worker"]]
    assert ports[0] != ports[1]  # two tasks on n9: the step's reserved ports, one each
    for task in seen:
        assert task["tf_config"]["cluster"] == cluster
        me = task["tf_config"]["task"]
        assert cluster[me["type"]][me["index"]].split(":")[0] == task["node"]  # own node
    assert sorted((t["tf_config"]["task"]["type"], t["tf_config"]["task"]["index"])
                  for t in seen) == [("chief", 0), ("evaluator", 0), ("ps", 0),
                                     ("worker", 0), ("worker", 1), ("worker", 2)]


@needs_slurm
def test_tfconfig_under_srun_names_the_slurm_shape_and_a_cyclic_step_is_refused(bed):
    env = {**TASK_ENV, "TRAINEXEC_SLURM_ROLES": "chief=1,worker=3"}
    shown = bed.run(["srun", "--nodes=3", "--ntasks=4", "--distribution=block",
                     sys.executable, "-m", "trainexec", "tfconfig"], env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("recognised shape: slurm") == 4
    refused = bed.run(["srun", "--nodes=3", "--ntasks=4", "--distribution=cyclic",
                       sys.executable, "-m", "trainexec", "tfconfig"], env=env)
    assert refused.returncode == 2
    assert "SLURM_DISTRIBUTION=cyclic" in refused.stderr
    assert "--distribution=block" in refused.stderr
    # Under slurm-exec, the ranks cyclic placed where block would have wait for peers
    # that never come: the refused ones cancel the step, so it ends now, not in 120 s.
    started = time.monotonic()
    step = bed.run(["srun", "--nodes=3", "--ntasks=4", "--distribution=cyclic",
                    sys.executable, "-m", "trainexec", "slurm-exec", "--", "sleep", "120"],
                   env=env, timeout=100)
    assert step.returncode != 0 and time.monotonic() - started < 60
    assert "--distribution=block" in step.stderr and "cancelling step" in step.stderr


# -- rendered batch scripts running the demo jobs -------------------------------------------
def _submit(bed, tmp_path, roles, fail_rank=None, steps=300):
    model = str(tmp_path / "model")
    command = [sys.executable, "-m", "trainexec.examples.keras_job", "--model-dir", model,
               "--max-steps", str(steps)]
    if fail_rank is not None:  # that task ends 1 (a bug a restart repeats) after 15 s
        command = ["sh", "-c", f'if [ "$SLURM_PROCID" = {fail_rank} ]; then sleep 15; '
                   'exit 1; fi; exec "$@"', "sh", *command]
    render = subprocess.run(
        [sys.executable, "-m", "trainexec", "render", "sbatch", "demo", "--nodes", "3",
         *roles, "--model-dir", model, "--grace", "30", "--max-restarts", "2",
         "--output", str(tmp_path / "job.out"),
         *(f"--env={k}={v}" for k, v in TASK_ENV.items()), "--", *command],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, check=True)
    script = tmp_path / "job.sbatch"
    script.write_text(render.stdout)
    return bed.sbatch(str(script)), model


def _wait_for_checkpoint(model, step, timeout=240):
    deadline = time.monotonic() + timeout
    while not glob.glob(f"{model}/ckpt-{step}.index"):
        assert time.monotonic() < deadline, f"no ckpt-{step} after {timeout} s"
        time.sleep(0.5)


def _outcome(bed, job, model, tmp_path, started, timeout=600):
    record = bed.wait_job(job, timeout=timeout)
    log = (tmp_path / "job.out").read_text()
    print(f"\njob {job}: {record['JobState']} exit {record['ExitCode']} restarts "
          f"{record['Restarts']} in {time.monotonic() - started:.1f} s")
    return record, log


def _final_metrics(log):
    lines = [line for line in log.splitlines() if line.startswith("final metrics: ")]
    return json.loads(lines[-1][len("final metrics: "):]) if lines else None


MWMS = ["--workers", "2", "--evaluator"]
PSS = ["--workers", "2", "--ps", "1", "--evaluator"]


@needs_slurm
def test_a_rendered_script_runs_the_multi_worker_job_to_max_steps(bed, tmp_path):
    started = time.monotonic()
    job, model = _submit(bed, tmp_path, MWMS)
    record, log = _outcome(bed, job, model, tmp_path, started, timeout=400)
    assert (record["JobState"], record["ExitCode"], record["Restarts"]) == (
        "COMPLETED", "0:0", "0"), log[-3000:]
    assert _final_metrics(log)["global_step"] == 300
    verdicts = read_verdicts(model, f"{job}-0")
    assert {t: v.code for t, v in verdicts.items()} == {
        "chief:0": 0, "worker:0": 0, "worker:1": 0, "evaluator:0": 0}
    assert {v.node for v in verdicts.values()} == {"n9", "n10", "n11"}


@pytest.mark.slurm_faults
@needs_slurm
def test_a_rendered_script_runs_the_parameter_server_job_to_max_steps(bed, tmp_path):
    started = time.monotonic()
    job, model = _submit(bed, tmp_path, PSS)
    record, log = _outcome(bed, job, model, tmp_path, started, timeout=400)
    assert (record["JobState"], record["ExitCode"]) == ("COMPLETED", "0:0"), log[-3000:]
    assert _final_metrics(log)["global_step"] == 300
    verdicts = read_verdicts(model, f"{job}-0")
    assert sorted(verdicts) == ["chief:0", "evaluator:0", "ps:0", "worker:0", "worker:1"]
    assert all(v.code == 0 for v in verdicts.values())
    assert {v.node for v in verdicts.values()} == {"n9", "n10", "n11"}


@pytest.mark.slurm_faults
@needs_slurm
@pytest.mark.parametrize("how", ["scancel --signal=TERM", "scontrol requeue"])
def test_a_preempted_job_saves_requeues_and_resumes_to_max_steps(bed, tmp_path, how):
    started = time.monotonic()
    job, model = _submit(bed, tmp_path, MWMS)
    _wait_for_checkpoint(model, 100)
    argv = (["scancel", "--signal=TERM", str(job)] if how.startswith("scancel")
            else ["scontrol", "requeue", str(job)])
    assert bed.run(argv).returncode == 0
    record, log = _outcome(bed, job, model, tmp_path, started)
    assert (record["JobState"], record["ExitCode"], record["Restarts"]) == (
        "COMPLETED", "0:0", "1"), log[-3000:]
    first = read_verdicts(model, f"{job}-0")
    # Every training task saved once and exited 143; the evaluator ended by the signal.
    assert {t: v.code for t, v in first.items()} == {
        "chief:0": 143, "worker:0": 143, "worker:1": 143, "evaluator:0": 143}
    # Each saved once, though slurm-exec passes the SIGTERM on to a task Slurm signalled
    # too: the second one during the save did no harm.
    for task in ("chief:0", "worker:0", "worker:1"):
        saves = [line for line in log.splitlines()
                 if line.startswith(f"[{task}]") and "Preempted (SIGTERM): saved" in line]
        assert len(saves) == 1, (task, saves)
    resumed = [line for line in log.splitlines()
               if "[chief:0]" in line and "training resumes at step" in line]
    assert resumed and int(resumed[-1].rsplit(" ", 1)[1]) >= 100  # from its save
    assert _final_metrics(log)["global_step"] == 300
    assert all(v.code == 0 for v in read_verdicts(model, f"{job}-1").values())


@pytest.mark.slurm_faults
@needs_slurm
def test_a_permanent_exit_fails_the_job_without_requeue(bed, tmp_path):
    started = time.monotonic()
    job, model = _submit(bed, tmp_path, MWMS, fail_rank=2)  # worker:1
    record, log = _outcome(bed, job, model, tmp_path, started, timeout=300)
    assert (record["JobState"], record["ExitCode"], record["Restarts"]) == (
        "FAILED", "1:0", "0"), log[-3000:]
    assert read_verdicts(model, f"{job}-0")["worker:1"].cause == "user_error"
    assert "fail, exit 1: worker:1 ended 1 (user_error)" in log


@pytest.mark.slurm_faults
@needs_slurm
def test_a_node_cut_off_ends_with_the_job_completed_after_the_requeue(bed, tmp_path):
    started = time.monotonic()
    job, model = _submit(bed, tmp_path, MWMS)
    _wait_for_checkpoint(model, 100)
    bed.link_down("n10")
    try:
        deadline = time.monotonic() + 180
        while bed.job(job).get("Restarts", "0") == "0":  # Slurm finds n10 gone, requeues
            assert time.monotonic() < deadline, "the job was not requeued"
            time.sleep(1)
        print(f"\nrequeued {time.monotonic() - started:.1f} s after submission")
    finally:
        bed.link_up("n10")  # the node comes back (ReturnToService=2)
    record, log = _outcome(bed, job, model, tmp_path, started)
    assert (record["JobState"], record["ExitCode"]) == ("COMPLETED", "0:0"), log[-3000:]
    assert int(record["Restarts"]) >= 1
    assert _final_metrics(log)["global_step"] == 300
