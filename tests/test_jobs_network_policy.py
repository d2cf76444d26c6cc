"""trainexec/jobs/network_policy.py: the NetworkPolicy rendered beside a TFJob, called
directly: its name and namespace, its defaults, that it is a valid Kubernetes object for
any TFJob name, and that it guards exactly the pods and the port of the TFJob rendered
with it. tests/test_jobs_render.py reads the policy's rules back through `trainexec render`.
"""

from __future__ import annotations

import re

import pytest

from trainexec.jobs.naming import name_problem
from trainexec.jobs.network_policy import policy_name, render_network_policy
from trainexec.jobs.shape import JobShape
from trainexec.jobs.tfjob import render_tfjob

pytestmark = pytest.mark.any_line

# The label the Kubeflow training operator puts on every pod of a TFJob.
OPERATOR_JOB_LABEL = "training.kubeflow.org/job-name"
# Kubernetes' rules: an object's name is a DNS-1123 subdomain (at most 253 characters),
# a label value at most 63 characters of alphanumerics, '-', '_' and '.'.
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


def test_the_policy_is_named_after_the_job_and_lives_in_its_namespace():
    policy = render_network_policy("mnist-2", namespace="team-a", port=2345)
    assert (policy["apiVersion"], policy["kind"]) == ("networking.k8s.io/v1", "NetworkPolicy")
    assert policy["metadata"] == {"name": "mnist-2-tf-port", "namespace": "team-a"}
    assert policy_name("mnist-2") == "mnist-2-tf-port"


def test_an_empty_namespace_is_left_out_so_the_policy_goes_where_it_is_applied():
    assert render_network_policy("demo", namespace="")["metadata"] == {
        "name": "demo-tf-port"}


def test_by_default_it_guards_the_operators_default_tf_port_over_tcp():
    (rule,) = render_network_policy("demo")["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 2222}]


@pytest.mark.parametrize("job", ["a", "mnist-1", "a" * 63, "x-" * 31 + "y"])
def test_the_policy_of_any_accepted_tfjob_name_is_a_valid_kubernetes_object(job):
    assert name_problem(job) is None
    policy = render_network_policy(job, namespace="ml")
    name = policy["metadata"]["name"]
    assert len(name) <= 253 and _SUBDOMAIN.fullmatch(name), name
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert list(selector) == [OPERATOR_JOB_LABEL]
    value = selector[OPERATOR_JOB_LABEL]
    assert value == job and len(value) <= 63 and _LABEL_VALUE.fullmatch(value)


@pytest.mark.parametrize("namespace, port", [(None, 2222), ("ml", 2345)])
def test_it_guards_the_pods_and_the_port_of_the_tfjob_rendered_with_it(namespace, port):
    shape = JobShape.from_counts(["python", "t.py"], workers=2, ps=1, evaluator=True,
                                 name="demo-7")
    tfjob = render_tfjob(shape, image="img:1", namespace=namespace, port=port)
    policy = render_network_policy(shape.name, namespace=namespace, port=port)
    # The operator labels each pod with the TFJob's name: the policy selects those pods,
    # and admits only them, in the TFJob's own namespace.
    job_pods = {"matchLabels": {OPERATOR_JOB_LABEL: tfjob["metadata"]["name"]}}
    assert policy["spec"]["podSelector"] == job_pods
    assert policy["spec"]["ingress"][0]["from"] == [{"podSelector": job_pods}]
    assert policy["metadata"].get("namespace") == tfjob["metadata"].get("namespace")
    # Every replica's TF port is the one port the policy opens.
    assert policy["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": port}]
    for replica in tfjob["spec"]["tfReplicaSpecs"].values():
        (container,) = replica["template"]["spec"]["containers"]
        tf_ports = [p["containerPort"] for p in container["ports"] if p["name"] == "tfjob-port"]
        assert tf_ports == [port]


def test_the_two_selectors_are_separate_so_the_yaml_has_no_anchors():
    import yaml

    policy = render_network_policy("demo")
    text = yaml.safe_dump(policy)
    assert "&id" not in text and "*id" not in text
    policy["spec"]["podSelector"]["matchLabels"]["extra"] = "x"  # narrowing one
    assert "extra" not in policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
