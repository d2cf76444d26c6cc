"""trainexec/jobs/{manifest_rules,manifest}.py and `trainexec launch --from FILE --dry-run`:
a TFJob manifest is checked before anything starts (every problem at its field path, with
the fix, exit 2; the shared TFJob schema rejects the same manifests), read into a job
shape, and planned task by task with the TF_CONFIG the training operator writes. Nothing
is started: the runs are tests/cluster/test_launch_from.py.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
import yaml

from job_manifests import (REMOVE, SHAPED_LIKE_KUBEFLOW, changed_copy, manifest,
                           schema_errors)
from trainexec import cli
from trainexec.errors import ConfigError
from trainexec.jobs.manifest import parse_manifest, read_manifest, require_commands
from trainexec.jobs.manifest_rules import check_tfjob
from trainexec.jobs.render import render_shape, tfjob_yaml

pytestmark = pytest.mark.any_line

def _write(tmp_path, document, name="job.yaml") -> str:
    path = tmp_path / name
    text = document if isinstance(document, str) else yaml.safe_dump(document, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return str(path)


def _launch(*args, capsys) -> tuple[int, list[str], str]:
    code = cli.main(["launch", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def _dry_run(path, *command, capsys):
    code, lines, err = _launch("--from", path, "--dry-run", *(["--", *command] if command
                                                               else []), capsys=capsys)
    assert code == 0, err
    return [json.loads(line) for line in lines], err


# -- the examples' shapes -----------------------------------------------------------------
@pytest.mark.parametrize("example", sorted(SHAPED_LIKE_KUBEFLOW))
def test_kubeflow_shaped_manifests_pass_both_checks_and_plan_every_replica(
        example, tmp_path, capsys):
    document = SHAPED_LIKE_KUBEFLOW[example]
    assert schema_errors(document) == [] and check_tfjob(document) == []
    plans, _ = _dry_run(_write(tmp_path, document), "python", "job.py", capsys=capsys)
    replicas = document["spec"]["tfReplicaSpecs"]
    expected = [(key.lower(), i)  # the operator lowercases the replica type
                for key, spec in replicas.items() for i in range(spec.get("replicas", 1))]
    order = ["chief", "master", "worker", "ps", "evaluator"]
    assert [p["task"] for p in plans] == [f"{t}:{i}" for t, i in
                                          sorted(expected, key=lambda e: order.index(e[0]))]
    for plan in plans:
        assert plan["command"] == ["python", "job.py"]  # -- COMMAND replaced every one
    if len(plans) == 1:  # the operator gives a one-replica job no TF_CONFIG
        assert "TF_CONFIG" not in plans[0]["env"]
        return
    configs = [json.loads(p["env"]["TF_CONFIG"]) for p in plans]
    cluster = configs[0]["cluster"]
    assert sorted(cluster) == sorted({t for t, _ in expected})  # evaluator inside, lowercase
    addresses = [a for job in cluster.values() for a in job]
    assert len(set(addresses)) == len(plans) and all(a.startswith("127.0.0.1:")
                                                     for a in addresses)
    for plan, config in zip(plans, configs):
        task_type, index = plan["task"].split(":")
        assert config == {"cluster": cluster, "task": {"type": task_type, "index": int(index)},
                          "environment": "cloud"}
        # Written as the operator's Go encoder writes it: no spaces, jobs sorted.
        assert plan["env"]["TF_CONFIG"] == json.dumps(
            {"cluster": dict(sorted(cluster.items())), "task": config["task"],
             "environment": "cloud"}, separators=(",", ":"))


def test_the_container_env_and_what_a_local_run_leaves_out(tmp_path, capsys):
    plans, err = _dry_run(_write(tmp_path, SHAPED_LIKE_KUBEFLOW["annotated"]), "python",
                          "job.py", capsys=capsys)
    for plan in plans:
        assert set(plan["env"]) == {"MODEL_DIR", "TF_CONFIG"}
        assert plan["env"]["MODEL_DIR"] == "gs://bucket/run"
    notes = [line for line in err.splitlines() if line.startswith("trainexec launch: note: ")]
    assert ("trainexec launch: note: spec.tfReplicaSpecs.worker.template.spec.containers[0]"
            ".env[1] (TOKEN) comes from secretKeyRef, which only Kubernetes fills in: unset "
            "here unless this shell sets it") in notes
    assert any("containers[1] (log-shipper) runs beside tensorflow on the cluster, not here"
               in note for note in notes)
    plans, err = _dry_run(_write(tmp_path, SHAPED_LIKE_KUBEFLOW["distribution-strategy"]),
                          "python", "job.py", capsys=capsys)
    assert "volumeMounts: nothing is mounted here: /train is this machine's own" in err


def test_a_replica_with_no_command_and_no_override_exits_2_naming_it(tmp_path, capsys):
    path = _write(tmp_path, SHAPED_LIKE_KUBEFLOW["dist-mnist"])
    code, lines, err = _launch("--from", path, "--dry-run", capsys=capsys)
    assert (code, lines) == (2, [])
    assert ("spec.tfReplicaSpecs.Chief, spec.tfReplicaSpecs.Worker, spec.tfReplicaSpecs.PS "
            "in " + path + " have no command") in err
    assert f"Pass the command after --, e.g. trainexec launch --from {path} -- " in err
    # A replica with its own command needs no override; one with only args does.
    plans, _ = _dry_run(_write(tmp_path, SHAPED_LIKE_KUBEFLOW["simple"]), capsys=capsys)
    assert [p["command"] for p in plans] == [["python", "/var/mnist.py"]] * 2
    with pytest.raises(ConfigError, match=r"^spec.tfReplicaSpecs.chief, spec.tfReplicaSpecs."
                       r"worker, spec.tfReplicaSpecs.evaluator in f.yaml have no command: on "
                       r"the cluster the image's entrypoint runs"):
        require_commands(parse_manifest(yaml.safe_dump(SHAPED_LIKE_KUBEFLOW["annotated"]),
                                        "f.yaml").shape, "f.yaml")


def test_command_and_args_are_the_program_line(tmp_path, capsys):
    document = manifest(Chief={"template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "i", "command": ["python", "-u"],
         "args": ["train.py", "--steps=3"]}]}}})
    document["spec"]["tfReplicaSpecs"]["Worker"] = copy.deepcopy(
        document["spec"]["tfReplicaSpecs"]["Chief"])
    plans, _ = _dry_run(_write(tmp_path, document), capsys=capsys)
    assert [p["command"] for p in plans] == [["python", "-u", "train.py", "--steps=3"]] * 2
    plans, _ = _dry_run(_write(tmp_path, document), "other.py", capsys=capsys)
    assert [p["command"] for p in plans] == [["other.py"]] * 2  # replaces command and args


def test_a_rendered_manifest_reads_back_as_the_same_shape():
    shape = render_shape("tfjob", "demo", ["python", "t.py", "--x"], workers=2, ps=1,
                         evaluator=True, env=["A=1", "B=two words"],
                         restart_policy="OnFailure")
    read = parse_manifest(tfjob_yaml(shape, image="img:1", namespace="ml", port=2300), "f")
    assert [(r.task_type, r.count, r.command, r.env, r.restart_policy) for r in read.shape.roles
            ] == [(r.task_type, r.count, r.command, r.env, r.restart_policy)
                  for r in shape.roles]
    assert [r.where for r in read.shape.roles] == [
        "spec.tfReplicaSpecs.Chief", "spec.tfReplicaSpecs.Worker", "spec.tfReplicaSpecs.PS",
        "spec.tfReplicaSpecs.Evaluator"]
    assert (read.name, read.namespace, read.ports) == ("demo", "ml", {
        "chief": 2300, "worker": 2300, "ps": 2300, "evaluator": 2300})
    assert (read.policies.clean_pod_policy, read.policies.success_policy) == ("None", "")


def test_the_operators_defaults_are_read_in():
    read = parse_manifest(yaml.safe_dump(SHAPED_LIKE_KUBEFLOW["annotated"]), "f")
    worker = read.shape.role("worker")
    assert (worker.count, worker.restart_policy) == (1, "Never")  # replicas 1, Never
    assert read.ports == {"chief": 2223, "worker": 2223, "evaluator": 2223}
    assert (read.policies.clean_pod_policy, read.policies.success_policy) == ("None", "")
    assert read.namespace == "default" and read.backoff_limit is None


def test_enable_dynamic_worker_plans_the_operators_sparse_view(tmp_path, capsys):
    document = copy.deepcopy(SHAPED_LIKE_KUBEFLOW["dist-mnist"])
    document["spec"]["enableDynamicWorker"] = True
    plans, _ = _dry_run(_write(tmp_path, document), "python", "job.py", capsys=capsys)
    configs = {p["task"]: json.loads(p["env"]["TF_CONFIG"]) for p in plans}
    ps = configs["ps:0"]["cluster"]["ps"] + configs["ps:1"]["cluster"]["ps"]
    assert configs["worker:1"] == {"cluster": {"worker": {"1": configs["worker:1"]["cluster"][
        "worker"]["1"]}, "ps": ps}, "task": {"type": "worker", "index": 1}}
    assert configs["ps:1"]["cluster"] == {"worker": {}, "ps": [ps[1]]}
    assert configs["chief:0"]["cluster"] == {"worker": {}, "ps": []}


# -- manifests the operator would not run as meant ----------------------------------------
_DELETE = REMOVE
W = "spec/tfReplicaSpecs/Worker"
C = f"{W}/template/spec/containers/0"


def _renamed(key):
    document = copy.deepcopy(SHAPED_LIKE_KUBEFLOW["dist-mnist"])
    replicas = document["spec"]["tfReplicaSpecs"]
    replicas[key] = replicas.pop("Worker")
    return document


def _changed(path, value):
    return changed_copy(SHAPED_LIKE_KUBEFLOW["dist-mnist"], path, value)


# (manifest, field path, words of the fix, whether the shared schema sees it too)
BAD = [
    (_renamed("Workr"), "spec.tfReplicaSpecs.Workr",
     "'Workr' is not a TFJob replica type: use one of Chief, Master, Worker, PS, Evaluator "
     "(did you mean Worker?)", True),
    (_changed(f"{W}/restartPolicy", "Onfailure"), "spec.tfReplicaSpecs.Worker.restartPolicy",
     "'Onfailure' is not a restart policy: use one of Always, OnFailure, Never, ExitCode "
     "(did you mean OnFailure?)", True),
    (_changed("metadata/name", "Dist_MNIST"), "metadata.name",
     "'Dist_MNIST' is not a DNS-1035 label", True),
    (_changed("metadata/name", "x" * 64), "metadata.name", "at most 63", True),
    (_changed("spec/tfReplicaSpecs/Master", copy.deepcopy(
        SHAPED_LIKE_KUBEFLOW["dist-mnist"]["spec"]["tfReplicaSpecs"]["Chief"])),
     "spec.tfReplicaSpecs", "has both Chief and Master: the operator allows one of them", True),
    (_changed(f"{C}/name", "trainer"), "spec.tfReplicaSpecs.Worker.template.spec.containers",
     "no container is named tensorflow (it is named 'trainer'): ", True),
    (_changed(f"{W}/template/spec/containers", [
        {"name": "tensorflow", "image": "a"}, {"name": "tensorflow", "image": "b"}]),
     "spec.tfReplicaSpecs.Worker.template.spec.containers",
     "2 containers are named tensorflow: keep one", True),
    (_changed(f"{C}/image", _DELETE),
     "spec.tfReplicaSpecs.Worker.template.spec.containers[0].image", "missing: give the image",
     True),
    (_changed("spec/runPolicy", {"cleanPodPolicy": "Runing"}), "spec.runPolicy.cleanPodPolicy",
     "(did you mean Running?)", True),
    (_changed("spec/runPolicy", {"backoffLimit": -1}), "spec.runPolicy.backoffLimit",
     "give an integer >= 0", True),
    (_changed("spec/successPolicy", "AllWorker"), "spec.successPolicy",
     "(did you mean AllWorkers?)", True),
    (_changed("spec/cleanPodPolicy", "None"), "spec.cleanPodPolicy",
     "move it to spec.runPolicy.cleanPodPolicy", True),
    (_changed(f"{W}/replicas", "2"), "spec.tfReplicaSpecs.Worker.replicas",
     "'2' is not a count: give an integer >= 0, unquoted", True),
    (_changed(f"{W}/restartpolicy", "Never"), "spec.tfReplicaSpecs.Worker.restartpolicy",
     "did you mean restartPolicy?", True),
    (_changed(f"{C}/env", [{"name": "STEPS", "value": 100}]),
     "spec.tfReplicaSpecs.Worker.template.spec.containers[0].env[0].value",
     "100 is not a string: quote it", True),
    (_changed(f"{C}/ports", [{"name": "tfjob-port-for-grpc", "containerPort": 2222}]),
     "spec.tfReplicaSpecs.Worker.template.spec.containers[0].ports[0].name",
     "at most 15 characters", True),
    (_changed(f"{C}/args", ["--steps", 3]),
     "spec.tfReplicaSpecs.Worker.template.spec.containers[0].args[1]",
     "3 is not a string: quote it", True),
    (_changed("apiVersion", "kubeflow.org/v2"), "apiVersion", "has apiVersion kubeflow.org/v1",
     True),
    (_changed("spec/tfReplicaSpecs", _DELETE), "spec.tfReplicaSpecs", "missing: give the "
     "replicas", True),
    (_changed("spec/tfReplicaSpecs/worker", copy.deepcopy(
        SHAPED_LIKE_KUBEFLOW["dist-mnist"]["spec"]["tfReplicaSpecs"]["Worker"])),
     "spec.tfReplicaSpecs.worker",
     "names the same replica type as spec.tfReplicaSpecs.Worker", False),  # any case: one
]


@pytest.mark.parametrize("document, path, words, schema_too", BAD,
                         ids=[row[1] + ":" + row[2][:20] for row in BAD])
def test_a_manifest_breaking_a_rule_is_refused_at_its_field_with_the_fix(
        document, path, words, schema_too, tmp_path, capsys):
    problems = check_tfjob(document)
    assert [str(p) for p in problems if p.path == path and words in p.text], problems
    # The shared schema refuses it as well, at that field or one holding it.
    found = schema_errors(document)
    dotted = re.sub(r"\[(\d+)\]", r".\1", path)  # the schema's paths: containers.0.image
    holding = [p for p, _ in found if dotted == p or dotted.startswith(p + ".")]
    assert bool(holding) is schema_too, found
    code, lines, err = _launch("--from", _write(tmp_path, document), "--dry-run", "--",
                               "python", "job.py", capsys=capsys)
    assert (code, lines) == (2, [])
    assert "is not a TFJob the training operator (v1.9) accepts:\n" in err
    assert f"  {path}: " in err and words in err


def test_every_problem_is_told_at_once():
    document = _changed(f"{W}/restartPolicy", "Onfailure")
    document["spec"]["tfReplicaSpecs"]["Workr"] = document["spec"]["tfReplicaSpecs"].pop(
        "Worker")
    assert [p.path for p in check_tfjob(document)] == [
        "spec.tfReplicaSpecs.Workr", "spec.tfReplicaSpecs.Workr.restartPolicy"]


@pytest.mark.parametrize("text, words", [
    ("kind: TFJob\nspec: [\n", "is not valid YAML (line 3, column 1)"),
    (yaml.safe_dump_all([SHAPED_LIKE_KUBEFLOW["simple"], SHAPED_LIKE_KUBEFLOW["dist-mnist"]]),
     "has 2 TFJob documents among 2 (kinds: TFJob, TFJob): give a file with one TFJob"),
    (yaml.safe_dump_all([{"kind": "NetworkPolicy"}, {"kind": "Service"}]),
     "has 0 TFJob documents among 2"),
    ("- just\n- a list\n", "a TFJob manifest must be a mapping of fields"),
])
def test_a_file_that_is_not_one_tfjob_exits_2(text, words, tmp_path, capsys):
    code, lines, err = _launch("--from", _write(tmp_path, text), "--dry-run", capsys=capsys)
    assert (code, lines) == (2, []) and words in err


@pytest.mark.parametrize("flags, limit", [([], 6), (["--max-restarts", "2"], 2),
                                           (["--max-restarts", "0"], 0)])
def test_a_rendered_tfjob_launches_from_its_file_without_a_backoff_limit_note(
        flags, limit, tmp_path, capsys):
    """`trainexec render tfjob ... > job.yaml; trainexec launch --from job.yaml`: the
    manifest says its backoffLimit, so the launcher takes it without the note it prints for
    a manifest that has none (shown by taking the field out)."""
    assert cli.main(["render", "tfjob", "demo", "--image", "i:1", "--workers", "2",
                     "--evaluator", *flags, "--", "python", "t.py"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    at = lines.index(f"    backoffLimit: {limit}")
    above = at
    while lines[above - 1].lstrip().startswith("#"):
        above -= 1
    assert lines[above].strip().startswith(f"# backoffLimit {limit} (--max-restarts)")
    path = _write(tmp_path, text)
    assert read_manifest(path).backoff_limit == limit
    plans, err = _dry_run(path, capsys=capsys)
    assert [p["task"] for p in plans] == ["chief:0", "worker:0", "worker:1", "evaluator:0"]
    assert "backoffLimit" not in err and "restarts up to" not in err
    assert "trainexec launch: note:" not in err
    # The same file without the field: the note this test is about.
    tfjob, policy = yaml.safe_load_all(text)
    del tfjob["spec"]["runPolicy"]["backoffLimit"]
    _, err = _dry_run(_write(tmp_path, yaml.safe_dump_all([tfjob, policy]), "bare.yaml"),
                      capsys=capsys)
    assert "trainexec launch: note: no runPolicy.backoffLimit" in err


def test_a_rendered_file_with_its_network_policy_is_read(tmp_path, capsys):
    shape = render_shape("tfjob", "demo", ["python", "t.py"], workers=1, evaluator=True)
    plans, _ = _dry_run(_write(tmp_path, tfjob_yaml(shape, image="i")), capsys=capsys)
    assert [p["task"] for p in plans] == ["chief:0", "worker:0", "evaluator:0"]
    assert all(p["command"] == ["python", "t.py"] for p in plans)


@pytest.mark.parametrize("args, words", [
    (["--workers", "2"], "takes the roles from the manifest: drop --workers"),
    (["--evaluator", "--no-chief"], "drop --evaluator, --no-chief"),
    (["--grace", "-1"], "--grace -1 is negative"),
    (["--max-restarts", "-1"], "--max-restarts -1 is negative"),
])
def test_launch_flags_that_cannot_go_with_from_exit_2(args, words, tmp_path, capsys):
    path = _write(tmp_path, SHAPED_LIKE_KUBEFLOW["simple"])
    code, lines, err = _launch("--from", path, "--dry-run", *args, capsys=capsys)
    assert (code, lines) == (2, []) and words in err


def test_a_manifest_with_nothing_that_trains_exits_2(tmp_path, capsys):
    document = manifest(PS={"template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "i", "command": ["x"]}]}}})
    code, _, err = _launch("--from", _write(tmp_path, document), "--dry-run", capsys=capsys)
    assert code == 2 and "has no Chief, Master or Worker replica: nothing trains" in err


def test_cannot_read_the_file_exits_2(tmp_path, capsys):
    code, _, err = _launch("--from", str(tmp_path / "none.yaml"), "--dry-run", capsys=capsys)
    assert code == 2 and "cannot read " in err and "No such file" in err


def test_dry_run_of_the_launchers_own_flags_prints_its_tasks(capsys):
    code, lines, err = _launch("--workers", "1", "--evaluator", "--dry-run", "--", "python",
                               "t.py", capsys=capsys)
    assert code == 0, err
    plans = [json.loads(line) for line in lines]
    assert [p["task"] for p in plans] == ["chief:0", "worker:0", "evaluator:0"]
    evaluator = json.loads(plans[2]["env"]["TF_CONFIG"])
    assert "evaluator" not in evaluator["cluster"]  # trainexec launch: outside the cluster
    assert all(p["command"] == ["python", "t.py"] for p in plans)


def test_a_file_that_is_not_text_exits_2(tmp_path, capsys):
    binary = tmp_path / "job.yaml"
    binary.write_bytes(b"\xff\xfe\x00kind: TFJob")
    code, _, err = _launch("--from", str(binary), "--dry-run", capsys=capsys)
    assert code == 2 and "it is not UTF-8 text" in err
