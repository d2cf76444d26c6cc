"""trainexec/jobs/manifest_rules.py on its own: `check_tfjob` on TFJob manifests as
Kubeflow users write them (YAML), each rule the operator acts on that
tests/test_jobs_manifest.py does not already break (metadata, the run policy's other
fields, pod templates, containers' command, env and ports), every problem at its field
path with the fix, and a problem's text."""


import pytest
import yaml

from job_manifests import REMOVE, changed_copy, schema_errors
from trainexec.jobs.manifest_rules import Problem, check_tfjob

pytestmark = pytest.mark.any_line

# A TFJob using every field the rules read, each as the operator accepts it.
GOOD = yaml.safe_load("""
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist-train
  namespace: team-a
  labels: {app: mnist, version: "2"}
  annotations: {sidecar.istio.io/inject: "false"}
spec:
  successPolicy: AllWorkers
  enableDynamicWorker: false
  runPolicy:
    cleanPodPolicy: Running
    ttlSecondsAfterFinished: 0
    activeDeadlineSeconds: 3600
    backoffLimit: 4
    suspend: false
    schedulingPolicy: {minAvailable: 3}
  tfReplicaSpecs:
    chief:
      replicas: 1
      restartPolicy: ExitCode
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: tensorflow
            image: gcr.io/my-project/mnist:1
            command: [python, /opt/train.py]
            args: ["--epochs", "2"]
            env:
            - {name: MODEL_DIR, value: /runs/mnist}
            - name: TOKEN
              valueFrom: {secretKeyRef: {name: hub, key: token}}
            ports:
            - {name: tfjob-port, containerPort: 2222, protocol: TCP}
          - name: log-shipper
            image: example.com/shipper:2
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {name: tensorflow, image: "gcr.io/my-project/mnist:1"}
""")
CHIEF = "spec.tfReplicaSpecs.chief"
TF = f"{CHIEF}.template.spec.containers[0]"


def changed(path, value):
    """GOOD with the field at `path` (keys and list indexes, '/'-separated) set to
    `value`, or removed when `value` is None."""
    return changed_copy(GOOD, path, REMOVE if value is None else value)


def problems_at(document):
    return {p.path: p.text for p in check_tfjob(document)}


def test_a_manifest_using_every_checked_field_rightly_has_no_problem():
    assert check_tfjob(GOOD) == []
    assert schema_errors(GOOD) == []  # the shared TFJob schema agrees it is a valid one


def test_unquoted_yaml_scalars_in_labels_and_annotations_are_told_quoted():
    document = yaml.safe_load("""
        apiVersion: kubeflow.org/v1
        kind: TFJob
        metadata:
          name: mnist
          labels: {version: 2}
          annotations: {sidecar.istio.io/inject: false}
        spec: {tfReplicaSpecs: {Worker: {template: {spec: {containers: [
          {name: tensorflow, image: "i:1"}]}}}}}
    """)
    assert problems_at(document) == {
        "metadata.labels.version": '2 is not a string: quote it, e.g. "2"',
        "metadata.annotations.sidecar.istio.io/inject":
            'False is not a string: quote it, e.g. "false"'}


@pytest.mark.parametrize("path, value, at, words", [
    ("kind", "Job", "kind", "'Job': this reads a TFJob (kind: TFJob)"),
    ("metadata", None, "metadata.name", "missing: give the job a name, e.g. metadata: "
     "{name: mnist}"),
    ("metadata/name", None, "metadata.name", "missing: give the job a name (a DNS-1035 label"),
    ("metadata/namespace", "Team_A", "metadata.namespace", "'Team_A' is not a DNS-1123 label"),
    ("spec", None, "spec", "missing: a TFJob needs spec.tfReplicaSpecs"),
    ("spec/enableDynamicWorker", "true", "spec.enableDynamicWorker",
     "'true': give true or false"),
    ("spec/runPolicy/backofflimit", 3, "spec.runPolicy.backofflimit",
     "'backofflimit' is not a field of runPolicy: did you mean backoffLimit?"),
    ("spec/runPolicy/activeDeadlineSeconds", 0, "spec.runPolicy.activeDeadlineSeconds",
     "0: give an integer >= 1"),
    ("spec/runPolicy/ttlSecondsAfterFinished", True, "spec.runPolicy.ttlSecondsAfterFinished",
     "True: give an integer >= 0"),
    ("spec/runPolicy/suspend", "no", "spec.runPolicy.suspend", "'no': give true or false"),
    ("spec/runPolicy/schedulingPolicy", "gang", "spec.runPolicy.schedulingPolicy",
     "schedulingPolicy must be a mapping of fields, not str 'gang'"),
    ("spec/runPolicy/managedBy", "kueue", "spec.runPolicy.managedBy",
     "'kueue' is not a managedBy value: use one of kubeflow.org/training-operator, "
     "kueue.x-k8s.io/multikueue"),
    ("spec/tfReplicaSpecs", {}, "spec.tfReplicaSpecs", "no replicas: give at least one"),
])
def test_metadata_and_spec_fields_are_refused_at_their_path_with_the_fix(
        path, value, at, words):
    found = problems_at(changed(path, value))
    assert at in found, found
    assert words in found[at]


@pytest.mark.parametrize("path, value, at, words", [
    ("replicas", -1, f"{CHIEF}.replicas", "-1 is not a count: give an integer >= 0"),
    ("template", None, f"{CHIEF}.template",
     "missing: give the pod template, with a container named tensorflow"),
    ("template/spec", None, f"{CHIEF}.template.spec",
     "missing: give the pod spec, with a container named tensorflow"),
    ("template/spec/restartPolicy", "ExitCode", f"{CHIEF}.template.spec.restartPolicy",
     "'ExitCode' is not a pod restart policy: use one of Always, OnFailure, Never"),
    ("template/spec/containers", [], f"{CHIEF}.template.spec.containers",
     "give a list with one container named tensorflow"),
    ("template/spec/containers/0/command", "python /opt/train.py", f"{TF}.command",
     'command must be a list of strings, e.g. ["python", "job.py"]'),
    ("template/spec/containers/0/env", {"MODEL_DIR": "/runs"}, f"{TF}.env",
     "env must be a list of {name: ..., value: ...}"),
    ("template/spec/containers/0/env/1/valuefrom", {}, f"{TF}.env[1].valuefrom",
     "did you mean valueFrom?"),
    ("template/spec/containers/0/env/0/name", None, f"{TF}.env[0].name",
     "missing: name the variable"),
    ("template/spec/containers/0/env/1/valueFrom", "hub", f"{TF}.env[1].valueFrom",
     "valueFrom must be a mapping of fields"),
    ("template/spec/containers/0/ports/0/containerPort", 70000,
     f"{TF}.ports[0].containerPort", "70000: give a port number 1..65535, e.g. 2222"),
    ("template/spec/containers/0/ports/0/containerPort", "2222",
     f"{TF}.ports[0].containerPort", "'2222': give a port number 1..65535"),
    ("template/spec/containers/0/ports/0/protocol", "tcp", f"{TF}.ports[0].protocol",
     "'tcp' is not a protocol: use one of TCP, UDP, SCTP (did you mean TCP?)"),
    ("template/spec/containers/0/ports/0/port", 2222, f"{TF}.ports[0].port",
     "'port' is not a field of a port"),
    ("template/spec/containers/1/image", "", f"{CHIEF}.template.spec.containers[1].image",
     "missing: give the image to run"),
])
def test_replica_pod_and_container_fields_are_refused_at_their_path_with_the_fix(
        path, value, at, words):
    found = problems_at(changed(f"spec/tfReplicaSpecs/chief/{path}", value))
    assert at in found, found
    assert words in found[at]


def test_a_container_without_a_name_is_told_twice_at_its_two_fields():
    document = changed("spec/tfReplicaSpecs/Worker/template/spec/containers/0/name", None)
    where = "spec.tfReplicaSpecs.Worker.template.spec.containers"
    assert problems_at(document) == {
        f"{where}[0].name": "missing: name the training container tensorflow",
        where: "no container is named tensorflow: the operator runs and configures "
               "(TF_CONFIG, tfjob-port) only that one: name the training container "
               "tensorflow"}


def test_problems_come_in_document_order_and_read_with_their_path():
    document = changed("metadata/name", "MNIST")
    document["kind"] = "tfjob"
    document["spec"]["runPolicy"]["cleanPodPolicy"] = "all"
    document["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] = "Always"
    document["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
        "args"] = ["--steps", 100]
    problems = check_tfjob(document)
    assert [p.path for p in problems] == [
        "kind", "metadata.name", "spec.runPolicy.cleanPodPolicy",
        "spec.tfReplicaSpecs.Worker.template.spec.containers[0].args[1]"]
    assert str(problems[2]) == ("spec.runPolicy.cleanPodPolicy: 'all' is not a clean pod "
                                "policy: use one of None, Running, All (did you mean All?)")


def test_a_document_that_is_not_a_mapping_is_one_problem_of_the_document():
    problems = check_tfjob(["kind: TFJob"])
    assert problems == [Problem("", "a TFJob manifest must be a mapping of fields, not "
                                    "list ['kind: TFJob']")]
    assert str(problems[0]).startswith("(the document): a TFJob manifest must be")
