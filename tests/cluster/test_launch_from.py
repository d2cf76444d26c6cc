"""`trainexec launch --from FILE.yaml` running TFJob manifests on this machine: the demo's
Keras job rendered by `trainexec render tfjob` runs to success with the evaluator's final
metrics; a manifest shaped like the Kubeflow examples runs with a `-- COMMAND` override;
each task sees the TF_CONFIG the training operator writes; each replica's restartPolicy
and the job's success and clean-pod policies decide as the operator does.

Reading, checking and planning manifests without starting anything is
tests/test_jobs_manifest.py; rendering is tests/test_jobs_render.py.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from job_manifests import SHAPED_LIKE_KUBEFLOW, manifest
from processes import ROOT, assert_no_survivors, printed_pids, role, run_cli

sys.path.insert(0, os.path.join(ROOT, "tests", "keras_programs"))

pytestmark = [pytest.mark.cluster, pytest.mark.any_line]


def _write(tmp_path, document) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(document if isinstance(document, str)
                    else yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return str(path)


def _tf_configs(stdout: str) -> dict[str, dict]:
    """Each task's TF_CONFIG, as it printed it ("[worker:1] TF_CONFIG {...}")."""
    return {name: json.loads(text) for name, text in
            re.findall(r"^\[(\w+:\d+)\] TF_CONFIG (\{.*\})$", stdout, re.MULTILINE)}


def _summary(stdout: str) -> dict[str, list[str]]:
    """The closing table's rows by task: [address, exit, restarts, secs]."""
    lines = stdout.splitlines()
    start = max(i for i, line in enumerate(lines) if line.split()[:2] == ["task", "address"])
    return {line.split()[0]: line.split()[1:] for line in lines[start + 1:]
            if re.match(r"^\w+:\d+ ", line)}


def _assert_tfjob_shape(configs: dict[str, dict], jobs: dict[str, int]) -> None:
    """Every task saw TFJob's TF_CONFIG: every replica type in `cluster` (the evaluator
    too), 127.0.0.1 ports for the service names, "environment": "cloud"."""
    assert sorted(configs) == sorted(f"{job}:{i}" for job, n in jobs.items() for i in range(n))
    cluster = next(iter(configs.values()))["cluster"]
    assert {job: len(tasks) for job, tasks in cluster.items()} == jobs
    assert all(address.startswith("127.0.0.1:") for tasks in cluster.values()
               for address in tasks)
    for name, config in configs.items():
        task_type, index = name.split(":")
        assert config == {"cluster": cluster, "task": {"type": task_type, "index": int(index)},
                          "environment": "cloud"}


def run_cli_render(*args: str) -> str:
    """`trainexec render ARGS`' stdout (run as a user would)."""
    done = subprocess.run([sys.executable, "-m", "trainexec", "render", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- the demo's Keras job, rendered then run --------------------------------------------
@pytest.mark.full_suite(covered_by=(
    "test_doc_commands_run.py: the Kubernetes guide's `trainexec render tfjob mnist ... > "
    "mnist.yaml` then `trainexec launch --from mnist.yaml` trains to max_steps and ends "
    "with the evaluator's final evaluation"))
@pytest.mark.keras
def test_the_rendered_demo_keras_job_runs_here_and_the_evaluator_writes_its_final_metrics(
        tmp_path):
    model_dir, result_file = tmp_path / "model", tmp_path / "final_result.json"
    env = ["--env", "TF_CPP_MIN_LOG_LEVEL=3", "--env", f"TMPDIR={tmp_path}"]
    if "TF_USE_LEGACY_KERAS" in os.environ:  # the manifest carries this line's Keras
        env += ["--env", f"TF_USE_LEGACY_KERAS={os.environ['TF_USE_LEGACY_KERAS']}"]
    # Each task prints the TF_CONFIG it was given, then becomes the demo job.
    show_then_run = ["sh", "-c", 'echo "TF_CONFIG $TF_CONFIG"; exec "$@"', "sh"]
    rendered = run_cli_render(
        "tfjob", "keras-demo", "--image", "gcr.io/my-project/trainexec-demo:1",
        "--workers", "2", "--evaluator", *env, "--", *show_then_run, sys.executable, "-m",
        "trainexec.examples.keras_job", "--model-dir", str(model_dir), "--max-steps", "300",
        "--result-file", str(result_file))
    path = _write(tmp_path, rendered)
    proc = run_cli("--from", path, "--timeout", "300", "--grace", "3", timeout=420)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.splitlines()[0] == (
        f"trainexec launch: TFJob keras-demo from {path}: succeeds when chief:0 and "
        "evaluator:0 exit 0 (successPolicy \"\": the chief decides; cleanPodPolicy None "
        "leaves the other pods to end by themselves, so evaluator:0 must finish too)")
    _assert_tfjob_shape(_tf_configs(proc.stdout), {"chief": 1, "worker": 2, "evaluator": 1})
    rows = _summary(proc.stdout)
    assert {name: row[1] for name, row in rows.items()} == {  # all ended by themselves
        "chief:0": "0", "worker:0": "0", "worker:1": "0", "evaluator:0": "0"}
    result = json.loads(result_file.read_text())
    assert result["metrics"]["global_step"] == 300 and result["metrics"]["accuracy"] > 0.5
    assert result["exports"] and os.path.isdir(result["exports"][0])
    assert "[evaluator:0] final metrics: " in proc.stdout


# -- a manifest shaped like the Kubeflow examples, with -- COMMAND ------------------------
def test_a_kubeflow_shaped_manifest_runs_here_with_a_command_override(tmp_path):
    # Chief, 2 workers, 2 ps, restartPolicy Never, no command: the image's entrypoint.
    path = _write(tmp_path, SHAPED_LIKE_KUBEFLOW["dist-mnist"])
    proc = run_cli("--from", path, "--grace", "1", "--", *role("chief=await-ps", "ps=serve"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == (f"trainexec launch: TFJob dist-mnist-e2e from {path}: succeeds when "
                        "chief:0 exit 0 (successPolicy \"\": the chief decides; cleanPodPolicy "
                        "None leaves the other pods to end by themselves)")
    assert "[chief:0] ps reachable" in lines and lines[-1].startswith("job succeeded")
    _assert_tfjob_shape(_tf_configs(proc.stdout), {"chief": 1, "worker": 2, "ps": 2})
    rows = _summary(proc.stdout)
    assert rows["chief:0"][1] == "0" and rows["worker:1"][1] == "0"
    assert rows["ps:0"][1] == rows["ps:1"][1] == "stopped"  # serving ps end with the job here
    assert_no_survivors(printed_pids(proc.stdout))


# -- restart, success and clean-pod policies ----------------------------------------------
def _workers_only(restart_policy: str, backoff_limit: int | None) -> dict:
    document = manifest("restarts", Worker={"replicas": 2, "restartPolicy": restart_policy,
                                            "template": {"spec": {"containers": [
                                                {"name": "tensorflow", "image": "i",
                                                 "env": [{"name": "ROLE_TAG",
                                                          "value": "from-manifest"}]}]}}})
    document["spec"]["successPolicy"] = "AllWorkers"  # every worker must exit 0
    if backoff_limit is not None:
        document["spec"]["runPolicy"] = {"backoffLimit": backoff_limit}
    return document


def _run_with_worker_1_crashing_once(tmp_path, document: dict) -> subprocess.CompletedProcess:
    """`trainexec launch --from` the manifest `document`, worker:1 exiting 1 on its first
    run (a marker under tmp_path/markers remembers it) once worker:0 is ready: on a
    loaded machine a crash before worker:0 has printed anything would end the job
    before worker:0 says what environment it got."""
    path = _write(tmp_path, document)
    markers = tmp_path / "markers"
    markers.mkdir()
    return subprocess.run([sys.executable, "-m", "trainexec", "launch", "--from", path,
                           "--grace", "1", "--", *role("worker:1=crash-once:1")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MARKER_DIR": str(markers),
                               "CRASH_AFTER": "worker:0"})


@pytest.mark.parametrize("restart_policy, code, words", [
    ("OnFailure", 0, "job succeeded"),             # exit 1 restarted, within backoffLimit 1
    ("ExitCode", 1, "job failed: worker:1 failed with exit code 1"),  # 1 is permanent
])
def test_each_replicas_restart_policy_decides_as_the_operators(restart_policy, code, words,
                                                               tmp_path):
    proc = _run_with_worker_1_crashing_once(
        tmp_path, _workers_only(restart_policy, backoff_limit=1))
    assert proc.returncode == code, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert words in proc.stdout + proc.stderr
    assert "succeeds when worker:0 and worker:1 exit 0 (successPolicy AllWorkers" in proc.stdout
    assert "[worker:0] env from-manifest 1" in proc.stdout  # the container's env
    assert _summary(proc.stdout)["worker:1"][2] == ("1" if code == 0 else "0")


def test_on_failure_without_a_backoff_limit_restarts_as_the_operator_would(tmp_path):
    # The operator's `simple` example: restartPolicy OnFailure, no backoffLimit. The
    # operator restarts the failed pod (no bound); here up to 6 times, said in a note.
    proc = _run_with_worker_1_crashing_once(
        tmp_path, _workers_only("OnFailure", backoff_limit=None))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "no runPolicy.backoffLimit" in proc.stderr and "up to 6 times" in proc.stderr
    assert "no restarts allowed" not in proc.stdout + proc.stderr
    assert _summary(proc.stdout)["worker:1"][2] == "1"  # restarted once


@pytest.mark.parametrize("clean_pod_policy, evaluator_exit", [
    ("None", "0"),          # left to finish on the cluster: waited for here
    ("Running", "stopped"),  # deleted on the cluster once the chief succeeds: stopped here
])
def test_the_clean_pod_policy_decides_whether_a_finishing_evaluator_is_waited_for(
        clean_pod_policy, evaluator_exit, tmp_path):
    document = copy.deepcopy(SHAPED_LIKE_KUBEFLOW["annotated"])
    document["spec"]["runPolicy"] = {"cleanPodPolicy": clean_pod_policy}
    path = _write(tmp_path, document)
    proc = run_cli("--from", path, "--grace", "1", "--",
                   *role("chief=ok", "worker=ok", "evaluator=sleep:4"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = _summary(proc.stdout)
    assert rows["chief:0"][1] == "0" and rows["evaluator:0"][1] == evaluator_exit
    if clean_pod_policy == "Running":
        assert ("cleanPodPolicy Running deletes the pods still running then: stopped here too, "
                "evaluator:0 among them if not done") in proc.stdout


def test_a_bad_manifest_starts_nothing(tmp_path):
    document = copy.deepcopy(SHAPED_LIKE_KUBEFLOW["dist-mnist"])
    document["spec"]["tfReplicaSpecs"]["Workr"] = document["spec"]["tfReplicaSpecs"].pop(
        "Worker")
    proc = run_cli("--from", _write(tmp_path, document), "--", *role())
    assert (proc.returncode, proc.stdout) == (2, "")
    assert "spec.tfReplicaSpecs.Workr: 'Workr' is not a TFJob replica type" in proc.stderr
