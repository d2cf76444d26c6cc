"""A job's shape as a Kubeflow TFJob (`kubeflow.org/v1`), as plain data: pure, no YAML.

One replica spec per role (Chief, Worker, PS, Evaluator: the operator's
spellings), each with `replicas`, its `restartPolicy` and a pod template whose
one container is named `tensorflow` (the operator gives TF_CONFIG only to that
container) with the image, the command (the program as `command`, its arguments
as `args`), the environment, and the TensorFlow port named `tfjob-port`. Every
container also gets its pod's UID as `TRAINEXEC_POD_UID` (the downward API), so
that a pod re-created on another node, which keeps its host name, is not taken
for its predecessor (`trainexec.records.liveness`).
`runPolicy.cleanPodPolicy` and `successPolicy` come from
`trainexec.jobs.policies.choose_policies` unless given; their reasons go in
the YAML as comments (`trainexec.jobs.yaml_text`). `runPolicy.backoffLimit`
bounds the job's restarts (default 6, what `trainexec launch --from` assumes
for a manifest without one); None leaves it out.

What a site adds to the pods (`trainexec.jobs.site_options.PodOptions`):
PersistentVolumeClaims as pod volumes mounted in the container, GPU limits on
the training replicas (chief, master, workers), `serviceAccountName` and
annotations on every pod template.

Example:
    ```python
    job = JobShape.from_counts(["python", "train.py"], workers=2, evaluator=True, name="demo")
    manifest = render_tfjob(job, image="gcr.io/me/train:1")
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["replicas"]   # 2
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.task_types import CHIEF, MASTER, WORKER
from trainexec.jobs.naming import CONTAINER_NAME, DEFAULT_PORT, PORT_NAME, REPLICA_TYPES
from trainexec.jobs.policies import LOCAL_BACKOFF_LIMIT, RunPolicies, choose_policies
from trainexec.jobs.shape import JobShape, Role
from trainexec.jobs.site_options import GPU_RESOURCE, PodOptions
from trainexec.records.liveness import POD_UID_VARIABLE

__all__ = ["API_VERSION", "KIND", "TRAINING_TYPES", "container_spec", "pod_template",
           "render_tfjob"]

API_VERSION = "kubeflow.org/v1"
KIND = "TFJob"
TRAINING_TYPES = (CHIEF, MASTER, WORKER)  # the replicas that get --gpus


def container_spec(role: Role, image: str, port: int = DEFAULT_PORT,
                   pods: PodOptions = PodOptions()) -> dict[str, Any]:
    """The `tensorflow` container of one role's pods."""
    container: dict[str, Any] = {"name": CONTAINER_NAME, "image": image}
    if role.command:
        container["command"] = list(role.command[:1])
        if len(role.command) > 1:
            container["args"] = list(role.command[1:])
    container["env"] = [{"name": name, "value": value} for name, value in role.env] + [
        {"name": POD_UID_VARIABLE, "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}]
    container["ports"] = [{"name": PORT_NAME, "containerPort": port}]
    if pods.gpus and role.task_type in TRAINING_TYPES:
        container["resources"] = {"limits": {GPU_RESOURCE: pods.gpus}}
    if pods.volumes:
        container["volumeMounts"] = [{"name": volume.name, "mountPath": volume.mount_path}
                                     for volume in pods.volumes]
    return container


def pod_template(role: Role, image: str, port: int = DEFAULT_PORT,
                 pods: PodOptions = PodOptions()) -> dict[str, Any]:
    """The pod template of one role's replicas."""
    template: dict[str, Any] = {}
    if pods.annotations:
        template["metadata"] = {"annotations": dict(pods.annotations)}
    spec: dict[str, Any] = {}
    if pods.service_account:
        spec["serviceAccountName"] = pods.service_account
    spec["containers"] = [container_spec(role, image, port, pods)]
    if pods.volumes:
        spec["volumes"] = [{"name": volume.name,
                            "persistentVolumeClaim": {"claimName": volume.claim}}
                           for volume in pods.volumes]
    template["spec"] = spec
    return template


def render_tfjob(shape: JobShape, *, image: str, namespace: str | None = None,
                 port: int = DEFAULT_PORT, policies: RunPolicies | None = None,
                 pods: PodOptions = PodOptions(),
                 backoff_limit: int | None = LOCAL_BACKOFF_LIMIT) -> dict[str, Any]:
    """The TFJob running `shape` (its `name` is the job's) from `image`, its pods
    with `pods`, restarted at most `backoff_limit` times (None: no bound given)."""
    policies = policies or choose_policies(shape)
    metadata: dict[str, Any] = {"name": shape.name}
    if namespace:
        metadata["namespace"] = namespace
    replicas = {
        REPLICA_TYPES[role.task_type]: {
            "replicas": role.count,
            "restartPolicy": role.restart_policy,
            "template": pod_template(role, image, port, pods),
        } for role in shape.roles if role.count}
    run_policy: dict[str, Any] = {"cleanPodPolicy": policies.clean_pod_policy}
    if backoff_limit is not None:
        run_policy["backoffLimit"] = backoff_limit
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata,
            "spec": {"runPolicy": run_policy,
                     "successPolicy": policies.success_policy,
                     "tfReplicaSpecs": replicas}}
