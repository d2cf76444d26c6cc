"""TFJob manifests for the tests, and the shared TFJob schema to check them against.

`SHAPED_LIKE_KUBEFLOW` holds manifests written here in the shapes of the TFJob examples
the Kubeflow training operator ships (examples/tensorflow/ on its release-1.9 branch):
most have no `command` (the image's entrypoint runs), some carry volumes, GPU limits,
annotations, a sidecar, several ps, `args` without `command`, env from a secret.

`schema_errors(manifest)` validates against ../shared/k8s/tfjob.schema.json (a JSON
Schema of a TFJob as the operator v1.9 accepts it, stricter than its CRD), each error as
(dotted path, message).
"""

from __future__ import annotations

import copy
import json
import pathlib

import jsonschema
import pytest

__all__ = ["SCHEMA_PATH", "SHAPED_LIKE_KUBEFLOW", "manifest", "schema_errors"]

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMA_PATH = ROOT.parent / "shared" / "k8s" / "tfjob.schema.json"
_VALIDATOR = None


def schema_errors(document) -> list[tuple[str, str]]:
    """(dotted field path, message) of every schema error of a TFJob manifest."""
    global _VALIDATOR
    if _VALIDATOR is None:
        if not SCHEMA_PATH.exists():
            pytest.fail(f"the shared TFJob schema is missing: {SCHEMA_PATH} (the repository's "
                        "checkout must have shared/ beside it)", pytrace=False)
        schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        _VALIDATOR = jsonschema.Draft202012Validator(schema)
    return sorted((".".join(str(p) for p in error.absolute_path), error.message)
                  for error in _VALIDATOR.iter_errors(document))


def _replica(replicas=1, restart="Never", command=None, **container):
    spec = {"name": "tensorflow", "image": "example.com/mnist:1", **container}
    if command is not None:
        spec["command"] = command
    out = {"template": {"spec": {"containers": [spec]}}}
    if replicas is not None:
        out["replicas"] = replicas
    if restart is not None:
        out["restartPolicy"] = restart
    return out


def manifest(name="mnist", **replicas) -> dict:
    """A TFJob with the replica specs given by type (e.g. Worker=_replica(2))."""
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"tfReplicaSpecs": copy.deepcopy(replicas)}}


_DIST = manifest("dist-mnist-e2e", Chief=_replica(1), PS=_replica(2), Worker=_replica(2))

_MULTI_WORKER = manifest(
    "multi-worker",
    Worker=_replica(2, volumeMounts=[{"mountPath": "/train", "name": "training"}],
                    resources={"limits": {"nvidia.com/gpu": 1}}))
_MULTI_WORKER["spec"]["runPolicy"] = {"cleanPodPolicy": "None"}
_MULTI_WORKER["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["volumes"] = [
    {"name": "training", "persistentVolumeClaim": {"claimName": "strategy-volume"}}]

_SUMMARIES = manifest(
    "mnist", Worker=_replica(1, command=["python", "/var/tf_mnist/mnist.py",
                                         "--log_dir=/train/logs", "--learning_rate=0.01"],
                             volumeMounts=[{"mountPath": "/train", "name": "training"}]))
_SUMMARIES["metadata"]["namespace"] = "kubeflow"
_SUMMARIES["spec"]["runPolicy"] = {"cleanPodPolicy": "None"}

_SIMPLE = manifest("tfjob-simple", Worker=_replica(2, "OnFailure",
                                                   command=["python", "/var/mnist.py"]))
_SIMPLE["metadata"]["namespace"] = "kubeflow"

# Annotations (Istio's sidecar switch) on the job and the pods, a sidecar container, env
# from a secret, args without a command, lowercase replica keys, an evaluator, a port.
_ANNOTATED = manifest("annotated", chief=_replica(1, "ExitCode"),
                      worker=_replica(None, None, args=["--epochs", "2"]),
                      evaluator=_replica(1, "ExitCode"))
_ANNOTATED["metadata"]["annotations"] = {"sidecar.istio.io/inject": "false"}
for _spec in _ANNOTATED["spec"]["tfReplicaSpecs"].values():
    _spec["template"]["metadata"] = {"annotations": {"sidecar.istio.io/inject": "false"}}
    _container = _spec["template"]["spec"]["containers"][0]
    _container["env"] = [{"name": "MODEL_DIR", "value": "gs://bucket/run"},
                         {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s",
                                                                          "key": "t"}}}]
    _container["ports"] = [{"name": "tfjob-port", "containerPort": 2223}]
    _spec["template"]["spec"]["containers"].append(
        {"name": "log-shipper", "image": "example.com/shipper:2"})

SHAPED_LIKE_KUBEFLOW = {
    "dist-mnist": _DIST,
    "distribution-strategy": _MULTI_WORKER,
    "mnist-with-summaries": _SUMMARIES,
    "simple": _SIMPLE,
    "annotated": _ANNOTATED,
}


REMOVE = object()  # as `value`: the field is removed


def changed_copy(document, path: str, value):
    """A deep copy of `document` with the field at `path` ('/'-separated keys and list
    indexes) set to `value`, or removed when `value` is REMOVE."""
    changed = copy.deepcopy(document)
    *parents, last = path.split("/")
    node = changed
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is REMOVE:
        del node[last]
    else:
        node[last] = value
    return changed
