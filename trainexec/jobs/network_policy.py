"""The NetworkPolicy rendered beside a TFJob: the TF port open only to the job's own pods.

TensorFlow's gRPC servers have no authentication: whoever reaches a task's
port can run graph operations in its pod. This `networking.k8s.io/v1`
NetworkPolicy selects the job's pods by the label the operator puts on each
(`training.kubeflow.org/job-name: NAME`) and admits ingress to them on the TF
port only from pods with that label, in the same namespace. Once a pod is
selected by a policy with `Ingress`, everything not admitted is refused, other
ports too: add rules for what else the pods serve (TensorBoard, metrics).
It takes effect where the cluster's network plugin enforces NetworkPolicies.

Example:
    ```python
    render_network_policy("demo", namespace="ml", port=2222)["spec"]["ingress"]
    # [{"from": [{"podSelector": {"matchLabels": {"training.kubeflow.org/job-name": "demo"}}}],
    #   "ports": [{"protocol": "TCP", "port": 2222}]}]
    ```
"""

from __future__ import annotations

from typing import Any

from trainexec.jobs.naming import DEFAULT_PORT, JOB_NAME_LABEL

__all__ = ["policy_name", "render_network_policy"]


def policy_name(job_name: str) -> str:
    return f"{job_name}-tf-port"


def render_network_policy(job_name: str, *, namespace: str | None = None,
                          port: int = DEFAULT_PORT) -> dict[str, Any]:
    """The policy admitting the TF `port` of job `job_name`'s pods only from its own pods."""
    metadata: dict[str, Any] = {"name": policy_name(job_name)}
    if namespace:
        metadata["namespace"] = namespace
    def job_pods() -> dict[str, Any]:  # a selector of its own at each place
        return {"matchLabels": {JOB_NAME_LABEL: job_name}}

    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": metadata,
            "spec": {"podSelector": job_pods(),
                     "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"podSelector": job_pods()}],
                                  "ports": [{"protocol": "TCP", "port": port}]}]}}
