"""trainexec/jobs/{tfjob,network_policy,vertex,render}.py and `trainexec render`: a job's
shape as a Kubeflow TFJob (valid against the shared TFJob schema for every combination of
roles), its NetworkPolicy (read back: the TF port admitted only from the job's own pods),
and a Vertex AI CustomJob (pools in Vertex's order). Nothing is started.
"""

from __future__ import annotations

import itertools
import json

import pytest
import yaml

from job_manifests import schema_errors
from trainexec import cli
from trainexec.jobs.manifest_rules import check_tfjob
from trainexec.jobs.naming import JOB_NAME_LABEL
from trainexec.jobs.network_policy import render_network_policy
from trainexec.jobs.render import render_shape, tfjob_yaml, vertex_json
from trainexec.jobs.shape import JobShape
from trainexec.jobs.tfjob import render_tfjob
from trainexec.jobs.vertex import render_vertex

pytestmark = pytest.mark.any_line

COMMAND = ["python", "-m", "trainexec.examples.keras_job", "--max-steps", "300"]
TYPES = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}

# Every combination of the launcher's roles that trains: (chief, workers, ps, evaluator).
COMBINATIONS = [combo for combo in itertools.product((True, False), (0, 1, 3), (0, 2),
                                                     (False, True)) if combo[0] or combo[1]]


# Every pod learns its UID (trainexec.records.liveness: a host name is not a node).
POD_UID_ENV = {"name": "TRAINEXEC_POD_UID",
               "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}

def _render(*args: str, capsys) -> tuple[int, str, str]:
    code = cli.main(["render", *args])
    out, err = capsys.readouterr()
    return code, out, err


# -- TFJob ------------------------------------------------------------------------------
@pytest.mark.parametrize("restart, namespace, max_restarts", [("ExitCode", None, None),
                                                              ("OnFailure", "ml", 0)])
@pytest.mark.parametrize("chief, workers, ps, evaluator", COMBINATIONS)
def test_every_role_combination_renders_a_valid_tfjob_with_what_was_asked(
        chief, workers, ps, evaluator, restart, namespace, max_restarts, capsys):
    flags = ["--workers", str(workers), "--ps", str(ps), "--port", "2345",
             "--restart-policy", restart, "--env", "TF_USE_LEGACY_KERAS=1",
             "--env", "MODEL_DIR=gs://bucket/run 1"]
    flags += ["--evaluator"] if evaluator else []
    flags += [] if chief else ["--no-chief"]
    flags += ["--namespace", namespace] if namespace else []
    flags += ["--max-restarts", str(max_restarts)] if max_restarts is not None else []
    code, out, err = _render("tfjob", "demo-1", "--image", "gcr.io/p/train:7", *flags, "--",
                             *COMMAND, capsys=capsys)
    assert code == 0, err
    tfjob, policy = yaml.safe_load_all(out)
    assert schema_errors(tfjob) == []
    assert tfjob["metadata"] == ({"name": "demo-1", "namespace": namespace} if namespace
                                 else {"name": "demo-1"})
    asked = {"chief": int(chief), "worker": workers, "ps": ps, "evaluator": int(evaluator)}
    replicas = tfjob["spec"]["tfReplicaSpecs"]
    assert {key: spec["replicas"] for key, spec in replicas.items()} == {
        TYPES[t]: n for t, n in asked.items() if n}
    assert list(replicas) == [TYPES[t] for t in ("chief", "worker", "ps", "evaluator")
                              if asked[t]]  # TF_CONFIG order
    for spec in replicas.values():
        assert spec["restartPolicy"] == restart
        (container,) = spec["template"]["spec"]["containers"]
        assert container == {
            "name": "tensorflow", "image": "gcr.io/p/train:7",
            "command": ["python"], "args": COMMAND[1:],
            "env": [{"name": "TF_USE_LEGACY_KERAS", "value": "1"},
                    {"name": "MODEL_DIR", "value": "gs://bucket/run 1"}, POD_UID_ENV],
            "ports": [{"name": "tfjob-port", "containerPort": 2345}]}
    assert tfjob["spec"]["runPolicy"] == {  # backoffLimit 6 unless --max-restarts says
        "cleanPodPolicy": "None", "backoffLimit": 6 if max_restarts is None else max_restarts}
    assert tfjob["spec"]["successPolicy"] == ("" if chief else "AllWorkers")
    assert policy["kind"] == "NetworkPolicy"


def test_render_tfjob_is_plain_data_from_the_shape():
    shape = JobShape.from_counts(["python", "train.py"], workers=0, evaluator=True,
                                 env={"A": "1"}, name="small")
    assert render_tfjob(shape, image="img:1") == {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "small"},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 6},
            "successPolicy": "",
            "tfReplicaSpecs": {
                job: {"replicas": 1, "restartPolicy": "ExitCode", "template": {"spec": {
                    "containers": [{"name": "tensorflow", "image": "img:1",
                                    "command": ["python"], "args": ["train.py"],
                                    "env": [{"name": "A", "value": "1"}, POD_UID_ENV],
                                    "ports": [{"name": "tfjob-port",
                                               "containerPort": 2222}]}]}}}
                for job in ("Chief", "Evaluator")}}}


@pytest.mark.parametrize("workers, ps, evaluator, chief, said, not_said", [
    (2, 0, True, True, ["cleanPodPolicy None", "evaluator runs its final evaluation",
                        "Running or All would delete it", 'successPolicy "": the job succeeds '
                        "when the chief exits 0", "restartPolicy ExitCode", "143 preempted"],
     ["ps exit 0"]),
    (1, 1, False, True, ["trainexec's ps exit 0 once every training task has finished"],
     ["evaluator runs"]),
    (3, 0, False, False, ["successPolicy AllWorkers: without a chief every worker trains"],
     ["evaluator runs", 'successPolicy ""']),
])
def test_the_policies_reasons_are_comments_above_them(workers, ps, evaluator, chief, said,
                                                       not_said):
    shape = render_shape("tfjob", "demo", COMMAND, workers=workers, ps=ps,
                         evaluator=evaluator, chief=chief)
    text = tfjob_yaml(shape, image="img:1")
    lines = text.splitlines()
    comments = " ".join(line.strip().lstrip("#").strip() for line in lines
                        if line.lstrip().startswith("#"))
    for words in said:
        assert words in comments
    for words in not_said:
        assert words not in comments
    # Each reason sits right above its field, and the comments change no data.
    at = lines.index("  runPolicy:")
    assert lines[at - 1].lstrip().startswith("#") and "successPolicy" not in lines[at - 1]
    assert lines[lines.index("  tfReplicaSpecs:") - 1].lstrip().startswith("#")
    assert next(yaml.safe_load_all(text)) == render_tfjob(shape, image="img:1")
    assert max(len(line) for line in lines if line.lstrip().startswith("#")) <= 100


@pytest.mark.parametrize("args, words", [
    (["Demo_1", "--image", "i", "--", "python"], "NAME 'Demo_1' is not a DNS-1035 label"),
    (["1demo", "--image", "i", "--", "python"], "e.g. 'demo'"),
    (["a" * 64, "--image", "i", "--", "python"], "a DNS-1035 label of at most 63"),
    (["demo", "--image", "i", "--no-chief", "--workers", "0", "--", "python"],
     "--no-chief with --workers 0 leaves no training task"),
    (["demo", "--image", "i", "--workers", "-1", "--", "python"], "--workers -1 is negative"),
    (["demo", "--image", "i", "--env", "FOO", "--", "python"],
     "--env 'FOO' has no '=': give NAME=VALUE"),
    (["demo", "--image", "i", "--env", "1X=2", "--", "python"],
     "is not an environment variable name"),
    (["demo", "--image", "i", "--env", "TF_CONFIG={}", "--", "python"],
     "TF_CONFIG is set for every pod by the training operator"),
    (["demo", "--image", "i"], "no command given: put the program every replica runs after --"),
    (["demo", "--image", "i", "--"], "no command given"),
    (["demo", "--image", "", "--", "python"], "--image '' is not an image"),
    (["demo", "--image", "i", "--port", "0", "--", "python"], "--port 0 is not a port number"),
    (["demo", "--image", "i", "--namespace", "My_NS", "--", "python"],
     "--namespace: 'My_NS' is not a DNS-1123 label"),
    (["demo", "--image", "i", "--max-restarts", "-1", "--", "python"],
     "--max-restarts -1 is negative: give 0 (fail on the first retryable exit) or more"),
    (["demo", "--image", "i", "--volume", "runs", "--", "python"],
     "--volume 'runs' is not CLAIM:/MOUNT/PATH: give the PersistentVolumeClaim and where to "
     "mount it, e.g. --volume shared-runs:/runs"),
    (["demo", "--image", "i", "--volume", "Runs_1:/runs", "--", "python"],
     "--volume 'Runs_1:/runs': 'Runs_1' is not a PersistentVolumeClaim name"),
    (["demo", "--image", "i", "--volume", "runs:runs", "--", "python"],
     "the mount path 'runs' must be absolute, without ':' or '..'"),
    (["demo", "--image", "i", "--volume", "runs:/a:b", "--", "python"],
     "the mount path '/a:b' must be absolute, without ':' or '..'"),
    (["demo", "--image", "i", "--volume", "runs:/", "--", "python"],
     "a volume cannot be mounted at /"),
    (["demo", "--image", "i", "--volume", "a:/runs", "--volume", "b:/runs/", "--", "python"],
     "--volume 'b:/runs/': /runs is already the mount path of --volume a:/runs"),
    (["demo", "--image", "i", "--gpus", "-1", "--", "python"],
     "--gpus -1 is not a GPU count: give 0 (none) or more per training replica"),
    (["demo", "--image", "i", "--service-account", "Trainer_SA", "--", "python"],
     "--service-account 'Trainer_SA' is not a Kubernetes service account name"),
    (["demo", "--image", "i", "--annotation", "sidecar.istio.io/inject", "--", "python"],
     "--annotation 'sidecar.istio.io/inject' has no '=': give KEY=VALUE, e.g. "
     "--annotation sidecar.istio.io/inject=false"),
    (["demo", "--image", "i", "--annotation", "bad key=1", "--", "python"],
     "--annotation 'bad key=1': 'bad key' is not an annotation key"),
    (["demo", "--image", "i", "--annotation", "/inject=1", "--", "python"],
     "'/inject' is not an annotation key"),
])
def test_bad_render_tfjob_input_exits_2_naming_it_and_the_fix(args, words, capsys):
    code, out, err = _render("tfjob", *args, capsys=capsys)
    assert (code, out) == (2, "")
    assert err.startswith("trainexec render tfjob: ") and words in err


def _pod(replica: dict) -> tuple[dict, dict, dict]:
    """(template metadata, pod spec, tensorflow container) of one replica spec."""
    template = replica["template"]
    (container,) = template["spec"]["containers"]
    return template.get("metadata", {}), template["spec"], container


@pytest.mark.parametrize("workers, ps, evaluator, chief", [(2, 1, True, True),
                                                           (3, 0, False, False)])
def test_site_flags_put_volumes_gpus_account_and_annotations_in_every_pod(
        workers, ps, evaluator, chief, capsys):
    flags = ["--workers", str(workers), "--ps", str(ps), "--volume", "shared-runs:/runs/",
             "--volume", "data.v1:/data", "--gpus", "2", "--service-account", "trainer",
             "--annotation", "sidecar.istio.io/inject=false", "--annotation", "team=ml"]
    flags += ["--evaluator"] if evaluator else []
    flags += [] if chief else ["--no-chief"]
    code, out, err = _render("tfjob", "demo", "--image", "i:1", *flags, "--", "python",
                             "train.py", "--model-dir", "/runs/demo", capsys=capsys)
    assert code == 0, err
    tfjob, _ = yaml.safe_load_all(out)
    assert schema_errors(tfjob) == [] and check_tfjob(tfjob) == []
    replicas = tfjob["spec"]["tfReplicaSpecs"]
    assert set(replicas) == {TYPES[t] for t, n in (("chief", chief), ("worker", workers),
                                                   ("ps", ps), ("evaluator", evaluator)) if n}
    for key, replica in replicas.items():
        metadata, pod, container = _pod(replica)
        assert metadata == {"annotations": {"sidecar.istio.io/inject": "false",
                                            "team": "ml"}}
        assert pod["serviceAccountName"] == "trainer"
        # a claim that is a label names its volume; data.v1 is not one
        assert pod["volumes"] == [
            {"name": "shared-runs", "persistentVolumeClaim": {"claimName": "shared-runs"}},
            {"name": "volume-1", "persistentVolumeClaim": {"claimName": "data.v1"}}]
        assert container["volumeMounts"] == [{"name": "shared-runs", "mountPath": "/runs"},
                                             {"name": "volume-1", "mountPath": "/data"}]
        # GPUs for the replicas that train; a ps or an evaluator asks for none
        expected = {"limits": {"nvidia.com/gpu": 2}} if key in ("Chief", "Worker") else None
        assert container.get("resources") == expected
        assert container["args"] == ["train.py", "--model-dir", "/runs/demo"]


def test_without_site_flags_the_pods_have_none_of_it(capsys):
    code, out, _ = _render("tfjob", "demo", "--image", "i", "--ps", "1", "--", "python",
                           capsys=capsys)
    assert code == 0
    tfjob, _ = yaml.safe_load_all(out)
    for replica in tfjob["spec"]["tfReplicaSpecs"].values():
        metadata, pod, container = _pod(replica)
        assert (metadata, set(pod)) == ({}, {"containers"})
        assert not {"resources", "volumeMounts"} & set(container)


@pytest.mark.parametrize("args, words", [
    (["demo"], "the following arguments are required: --image"),
    (["demo", "--image", "i", "--restart-policy", "Never", "--", "x"],
     "argument --restart-policy: invalid choice: 'Never'"),
])
def test_missing_or_unknown_render_flags_exit_2(args, words, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["render", "tfjob", *args])
    assert exited.value.code == 2
    assert words in capsys.readouterr().err


# -- NetworkPolicy ----------------------------------------------------------------------
def _admits(policy: dict, namespace: str, labels: dict, port: int) -> bool:
    """Whether `policy` lets a pod in `namespace` with `labels` reach `port` of the pods
    it selects (NetworkPolicy semantics: a peer with only a podSelector is a pod of the
    policy's own namespace; a rule with ports admits only those)."""
    own = policy["metadata"].get("namespace", "default")
    for rule in policy["spec"].get("ingress", []):
        peers = rule.get("from")
        peer_ok = peers is None or any(
            set(peer) == {"podSelector"} and namespace == own
            and peer["podSelector"]["matchLabels"].items() <= labels.items()
            for peer in peers)
        ports = rule.get("ports")
        port_ok = ports is None or any(p.get("port") == port and p.get("protocol", "TCP")
                                       == "TCP" for p in ports)
        if peer_ok and port_ok:
            return True
    return False


JOB_POD = {JOB_NAME_LABEL: "demo", "training.kubeflow.org/replica-type": "worker"}


@pytest.mark.parametrize("namespace, labels, port, admitted", [
    ("ml", JOB_POD, 2345, True),                                  # the job's own pod
    ("ml", {JOB_NAME_LABEL: "demo"}, 2345, True),
    ("ml", {JOB_NAME_LABEL: "other"}, 2345, False),               # another job's pod
    ("ml", {}, 2345, False),                                      # any other pod
    ("ml", {"app": "notebook"}, 2345, False),
    ("other", JOB_POD, 2345, False),                              # same labels, elsewhere
    ("ml", JOB_POD, 6006, False),                                 # another port
    ("ml", JOB_POD, 2222, False),
])
def test_the_network_policy_admits_the_tf_port_only_from_the_jobs_own_pods(
        namespace, labels, port, admitted, capsys):
    code, out, err = _render("tfjob", "demo", "--image", "i", "--namespace", "ml", "--port",
                             "2345", "--", "python", capsys=capsys)
    assert code == 0, err
    _, policy = yaml.safe_load_all(out)
    assert policy["apiVersion"] == "networking.k8s.io/v1"
    assert policy["metadata"] == {"name": "demo-tf-port", "namespace": "ml"}
    assert policy["spec"]["podSelector"] == {"matchLabels": {JOB_NAME_LABEL: "demo"}}
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # all else refused
    assert _admits(policy, namespace, labels, port) is admitted


@pytest.mark.parametrize("name, namespace, port", [("demo", None, 2222), ("a-b-9", "ml", 1)])
def test_render_network_policy_reads_back(name, namespace, port):
    policy = render_network_policy(name, namespace=namespace, port=port)
    selector = {"matchLabels": {JOB_NAME_LABEL: name}}
    assert policy["spec"] == {"podSelector": selector, "policyTypes": ["Ingress"],
                              "ingress": [{"from": [{"podSelector": selector}],
                                           "ports": [{"protocol": "TCP", "port": port}]}]}
    assert ("namespace" in policy["metadata"]) is (namespace is not None)


def test_no_network_policy_leaves_one_document(capsys):
    code, out, _ = _render("tfjob", "demo", "--image", "i", "--no-network-policy", "--",
                           "python", capsys=capsys)
    assert code == 0
    assert [doc["kind"] for doc in yaml.safe_load_all(out)] == ["TFJob"]


# -- Vertex AI --------------------------------------------------------------------------
@pytest.mark.parametrize("workers, ps, evaluator, pools", [
    (1, 0, False, [1, 1]),
    (0, 0, False, [1]),
    (2, 0, True, [1, 2, None, 1]),
    (0, 1, False, [1, None, 1]),
    (0, 0, True, [1, None, None, 1]),
    (3, 2, True, [1, 3, 2, 1]),
])
def test_vertex_lists_the_pools_in_vertex_order_with_the_counts_asked(
        workers, ps, evaluator, pools, capsys):
    flags = ["--workers", str(workers), "--ps", str(ps)] + (["--evaluator"] if evaluator
                                                            else [])
    code, out, err = _render("vertex", "my job", "--image", "gcr.io/p/t:1", "--machine-type",
                             "n1-standard-8", *flags, "--env", "A=1", "--", *COMMAND,
                             capsys=capsys)
    assert code == 0, err
    job = json.loads(out)
    assert job["displayName"] == "my job"
    specs = job["jobSpec"]["workerPoolSpecs"]
    assert [spec.get("replicaCount") for spec in specs] == pools
    for spec in specs:
        if spec:
            assert spec["machineSpec"] == {"machineType": "n1-standard-8"}
            assert spec["containerSpec"] == {"imageUri": "gcr.io/p/t:1",
                                             "command": ["python"], "args": COMMAND[1:],
                                             "env": [{"name": "A", "value": "1"}]}
        else:
            assert spec == {}  # a role left out in the middle: Vertex's empty pool


def test_vertex_has_no_workers_only_form(capsys):
    code, _, err = _render("vertex", "demo", "--image", "i", "--machine-type", "n1",
                           "--no-chief", "--workers", "2", "--", "python", capsys=capsys)
    assert code == 2 and "--no-chief has no Vertex AI form" in err
    with pytest.raises(ValueError, match="needs a chief"):
        render_vertex(JobShape.from_counts(["x"], chief=False), image="i", machine_type="t")


def test_vertex_json_refuses_an_empty_machine_type():
    shape = render_shape("vertex", "demo", ["python"])
    with pytest.raises(Exception, match="--machine-type '' is not a machine type"):
        vertex_json(shape, image="i", machine_type="")


def test_vertex_site_flags_give_training_pools_accelerators_and_every_pool_the_share(capsys):
    code, out, err = _render(
        "vertex", "demo", "--image", "i:1", "--machine-type", "n1-standard-8", "--workers",
        "2", "--ps", "1", "--evaluator", "--accelerator", "NVIDIA_TESLA_T4:2",
        "--service-account", "trainer@my-project.iam.gserviceaccount.com",
        "--nfs", "10.0.0.2:/vol1:runs", "--network", "projects/12345/global/networks/default",
        "--", "python", "train.py", "--model-dir", "/mnt/nfs/runs/demo", capsys=capsys)
    assert code == 0, err
    job = json.loads(out)["jobSpec"]
    assert job["serviceAccount"] == "trainer@my-project.iam.gserviceaccount.com"
    assert job["network"] == "projects/12345/global/networks/default"
    chief, workers, ps, evaluator = job["workerPoolSpecs"]
    for pool in (chief, workers):
        assert pool["machineSpec"] == {"machineType": "n1-standard-8",
                                       "acceleratorType": "NVIDIA_TESLA_T4",
                                       "acceleratorCount": 2}
    for pool in (ps, evaluator):
        assert pool["machineSpec"] == {"machineType": "n1-standard-8"}
    for pool in (chief, workers, ps, evaluator):
        assert pool["nfsMounts"] == [{"server": "10.0.0.2", "path": "/vol1",
                                      "mountPoint": "runs"}]


def test_vertex_without_site_flags_adds_nothing(capsys):
    code, out, _ = _render("vertex", "demo", "--image", "i", "--machine-type", "n1", "--",
                           "python", capsys=capsys)
    assert code == 0
    job = json.loads(out)["jobSpec"]
    assert set(job) == {"workerPoolSpecs"}
    assert set(job["workerPoolSpecs"][0]) == {"replicaCount", "machineSpec", "containerSpec"}


@pytest.mark.parametrize("args, words", [
    (["--accelerator", "nvidia-t4:1"], "--accelerator 'nvidia-t4:1' is not TYPE:COUNT"),
    (["--accelerator", "NVIDIA_TESLA_T4"], "e.g. --accelerator NVIDIA_TESLA_T4:1"),
    (["--accelerator", "NVIDIA_TESLA_T4:0"], "(1 or more)"),
    (["--service-account", "trainer"], "--service-account 'trainer' is not a service "
     "account's email: give the account the job runs as, e.g. --service-account "
     "trainer@my-project.iam.gserviceaccount.com"),
    (["--nfs", "10.0.0.2:/vol1"], "--nfs '10.0.0.2:/vol1' is not SERVER:/PATH:NAME"),
    (["--nfs", "10.0.0.2:vol1:runs"], "is not SERVER:/PATH:NAME"),
    (["--nfs", "10.0.0.2:/vol1:a/b"], "'a/b' is not a directory name"),
    (["--nfs", "s:/a:runs", "--nfs", "s:/b:runs"], "/mnt/nfs/runs is already mounted"),
    (["--network", ""], "--network '' is not a network name"),
])
def test_bad_vertex_site_flags_exit_2_naming_them(args, words, capsys):
    code, out, err = _render("vertex", "demo", "--image", "i", "--machine-type", "n1", *args,
                             "--", "python", capsys=capsys)
    assert (code, out) == (2, "")
    assert err.startswith("trainexec render vertex: ") and words in err


def _guide_command(page: str, target: str) -> list[str]:
    """The guide's `trainexec render ... > FILE` line for `target` (with volumes or
    accelerators), as a reader pastes it, without the shell's redirection."""
    import pathlib
    import re
    import shlex

    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "guides" / page
            ).read_text().replace("\\\n", " ")
    [line] = [m for m in re.findall(rf"^(trainexec render {target} .*?) > \S+$", text, re.M)
              if "--volume" in m or "--accelerator" in m]
    return shlex.split(line)[1:]


def test_the_kubernetes_guides_site_commands_render_what_it_says(capsys):
    assert cli.main(_guide_command("kubernetes.md", "tfjob")) == 0
    tfjob, _ = yaml.safe_load_all(capsys.readouterr().out)
    assert schema_errors(tfjob) == [] and tfjob["spec"]["runPolicy"]["backoffLimit"] == 6
    metadata, pod, container = _pod(tfjob["spec"]["tfReplicaSpecs"]["Worker"])
    assert metadata["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert pod["volumes"][0]["persistentVolumeClaim"] == {"claimName": "mnist-runs"}
    mount = container["volumeMounts"][0]["mountPath"]
    model_dir = container["args"][container["args"].index("--model-dir") + 1]
    assert model_dir.startswith(mount + "/")  # the model_dir is on the shared volume
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 1}}

    assert cli.main(_guide_command("kubernetes.md", "vertex")) == 0
    job = json.loads(capsys.readouterr().out)["jobSpec"]
    chief = job["workerPoolSpecs"][0]
    nfs = chief["nfsMounts"][0]
    model_dir = chief["containerSpec"]["args"][-1]
    assert model_dir.startswith(f"/mnt/nfs/{nfs['mountPoint']}/")
    assert chief["machineSpec"]["acceleratorCount"] == 1 and "network" in job
