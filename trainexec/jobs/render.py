"""What `trainexec render` prints: its flags checked into a `JobShape`, and the texts.

`render_shape` turns the command line (NAME, the role flags of `trainexec
launch`, `--env NAME=VALUE`, `--restart-policy`, the command after `--`) into
the job's shape, or a ConfigError naming the flag and the fix. `tfjob_yaml`
prints the TFJob, with the reasons for its run and restart policies as
comments (`runPolicy.backoffLimit` from `--max-restarts`), and by default a
NetworkPolicy as a second document; `vertex_json` prints the Vertex AI
CustomJob. `pod_options` and `vertex_options` check what a site adds (volumes,
GPUs, a service account, annotations; `trainexec.jobs.site_options`).

Example:
    ```python
    job = render_shape("tfjob", "demo", ["python", "train.py"], workers=2, evaluator=True)
    pods = pod_options(volumes=["shared-runs:/runs"], gpus=1)
    print(tfjob_yaml(job, image="gcr.io/me/train:1", pods=pods, max_restarts=6))
    ```
"""

from __future__ import annotations

import json
from typing import Sequence

from trainexec.errors import ConfigError
from trainexec.jobs.naming import (DEFAULT_PORT, env_name_problem, label_problem,
                                   name_problem)
from trainexec.jobs.network_policy import render_network_policy
from trainexec.jobs.policies import (LOCAL_BACKOFF_LIMIT, choose_policies,
                                     restart_policy_reason)
from trainexec.jobs.shape import EXIT_CODE, JobShape
from trainexec.jobs.site_options import (PodOptions, VertexOptions, check_gpus,
                                         check_k8s_service_account,
                                         check_vertex_service_account, parse_accelerator,
                                         parse_annotations, parse_nfs_mounts, parse_volumes)
from trainexec.jobs.tfjob import render_tfjob
from trainexec.jobs.vertex import render_vertex
from trainexec.jobs.yaml_text import dump_documents

__all__ = ["SBATCH", "TFJOB", "VERTEX", "check_image", "check_max_restarts",
           "check_namespace", "check_port", "check_sbatch_name", "parse_env", "pod_options",
           "render_shape", "tfjob_yaml", "vertex_json", "vertex_options"]

SBATCH = "sbatch"
TFJOB = "tfjob"
VERTEX = "vertex"
_MAX_DISPLAY_NAME = 128  # Vertex AI's limit for a display name


def parse_env(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`--env NAME=VALUE` flags as (name, value) pairs; ConfigError naming a bad one."""
    pairs = []
    for value in values:
        name, sep, text = value.partition("=")
        if not sep:
            raise ConfigError(f"--env {value!r} has no '=': give NAME=VALUE, e.g. "
                              "--env TF_USE_LEGACY_KERAS=1")
        problem = env_name_problem(name)
        if problem:
            raise ConfigError(f"--env {value!r}: {problem}")
        pairs.append((name, text))
    return tuple(pairs)


def check_sbatch_name(name: str) -> None:
    if not name or any(c.isspace() for c in name) or len(name) > 200:
        raise ConfigError(f"NAME {name!r}: a Slurm job name is 1 to 200 characters without "
                          "spaces, e.g. demo")


def check_image(image: str) -> None:
    if not image or image != image.strip():
        raise ConfigError(f"--image {image!r} is not an image: give one, e.g. "
                          "--image gcr.io/my-project/train:1")


def check_port(port: int) -> None:
    if not 1 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a port number: give 1..65535, e.g. "
                          f"--port {DEFAULT_PORT}")


def check_max_restarts(max_restarts: int) -> None:
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
        raise ConfigError(f"--max-restarts {max_restarts} is negative: give 0 (fail on the "
                          f"first retryable exit) or more, e.g. --max-restarts "
                          f"{LOCAL_BACKOFF_LIMIT}")


def pod_options(*, volumes: Sequence[str] = (), gpus: int = 0,
                service_account: str | None = None,
                annotations: Sequence[str] = ()) -> PodOptions:
    """The TFJob pods' `--volume`, `--gpus`, `--service-account` and `--annotation`,
    checked; ConfigError naming the first bad one and the fix."""
    check_gpus(gpus)
    check_k8s_service_account(service_account)
    return PodOptions(parse_volumes(volumes), gpus, service_account,
                      parse_annotations(annotations))


def vertex_options(*, accelerator: str | None = None, service_account: str | None = None,
                   nfs: Sequence[str] = (), network: str | None = None) -> VertexOptions:
    """The CustomJob's `--accelerator`, `--service-account`, `--nfs` and `--network`,
    checked; ConfigError naming the first bad one and the fix."""
    accelerator_type, count = parse_accelerator(accelerator)
    check_vertex_service_account(service_account)
    if network is not None and (not network or any(c.isspace() for c in network)):
        raise ConfigError(f"--network {network!r} is not a network name: give the VPC "
                          "network's full name, e.g. --network "
                          "projects/12345/global/networks/default")
    return VertexOptions(accelerator_type, count, service_account, parse_nfs_mounts(nfs),
                         network)


def check_namespace(namespace: str | None) -> None:
    problem = label_problem(namespace, "namespace") if namespace is not None else None
    if problem:
        raise ConfigError(f"--namespace: {problem}")


def render_shape(target: str, name: str, command: Sequence[str], *, workers: int = 1,
                 ps: int = 0, evaluator: bool = False, chief: bool = True,
                 env: Sequence[str] = (), restart_policy: str = EXIT_CODE) -> JobShape:
    """The shape the `trainexec render TARGET` flags describe; ConfigError naming
    the first flag that cannot work, and the fix."""
    if target == TFJOB:
        problem = name_problem(name)
        if problem:
            raise ConfigError(f"NAME {problem} (the TFJob's name, used in its pods' and "
                              "services' names)")
    elif target == SBATCH:
        check_sbatch_name(name)
    elif not name or len(name) > _MAX_DISPLAY_NAME:
        raise ConfigError(f"NAME {name!r}: a Vertex AI display name has 1 to "
                          f"{_MAX_DISPLAY_NAME} characters")
    for flag, count in (("--workers", workers), ("--ps", ps)):
        if count < 0:
            raise ConfigError(f"{flag} {count} is negative: give 0 or more, e.g. {flag} 2")
    if not chief and workers == 0:
        raise ConfigError("--no-chief with --workers 0 leaves no training task: drop "
                          "--no-chief or pass --workers 1 or more")
    if target == VERTEX and not chief:
        raise ConfigError("--no-chief has no Vertex AI form: worker pool 0 is always the "
                          "chief (the primary replica). Drop --no-chief; a workers-only "
                          "job's worker 0 is what Vertex AI runs as its chief")
    if not command:
        raise ConfigError(f"no command given: put the program every replica runs after --, "
                          f"e.g. trainexec render {target} {name or 'demo'} --image IMAGE "
                          "-- python train.py")
    return JobShape.from_counts(command, workers=workers, ps=ps, evaluator=evaluator,
                                chief=chief, env=parse_env(env),
                                restart_policy=restart_policy, name=name)


def tfjob_yaml(shape: JobShape, *, image: str, namespace: str | None = None,
               port: int = DEFAULT_PORT, network_policy: bool = True,
               pods: PodOptions = PodOptions(),
               max_restarts: int = LOCAL_BACKOFF_LIMIT) -> str:
    """The TFJob (and NetworkPolicy) as YAML, with the policies' reasons as comments;
    `runPolicy.backoffLimit` is `max_restarts`."""
    check_image(image)
    check_port(port)
    check_namespace(namespace)
    check_max_restarts(max_restarts)
    policies = choose_policies(shape)
    documents = [render_tfjob(shape, image=image, namespace=namespace, port=port,
                              policies=policies, pods=pods, backoff_limit=max_restarts)]
    restart = sorted({role.restart_policy for role in shape.roles})
    comments = [{("spec", "runPolicy"): policies.clean_reasons,
                 ("spec", "runPolicy", "backoffLimit"): [
                     f"backoffLimit {max_restarts} (--max-restarts): the operator fails the "
                     "job once its pods have failed or been restarted about this often; "
                     "without it a retryable exit restarts them without bound. `trainexec "
                     "launch --from` restarts at most this often too."],
                 ("spec", "successPolicy"): policies.success_reasons,
                 ("spec", "tfReplicaSpecs"): [restart_policy_reason(p) for p in restart]}]
    if network_policy:
        documents.append(render_network_policy(shape.name, namespace=namespace, port=port))
        comments.append({("apiVersion",): [
            "TensorFlow's gRPC servers have no authentication: anyone reaching a task's port "
            "can run",
            f"graph operations in its pod. Only this job's pods may reach port {port} of its "
            "pods; other",
            "ingress to them is refused too: add rules for anything else they serve."]})
    header = [f"TFJob {shape.name}, rendered by trainexec render tfjob.",
              "Run it on this machine first:  trainexec launch --from THIS_FILE.yaml",
              "then on the cluster:            kubectl apply -f THIS_FILE.yaml"]
    return dump_documents(documents, comments, header)


def vertex_json(shape: JobShape, *, image: str, machine_type: str,
                options: VertexOptions = VertexOptions()) -> str:
    """The Vertex AI CustomJob as indented JSON."""
    check_image(image)
    if not machine_type or machine_type != machine_type.strip():
        raise ConfigError(f"--machine-type {machine_type!r} is not a machine type: give "
                          "one, e.g. --machine-type n1-standard-4")
    return json.dumps(render_vertex(shape, image=image, machine_type=machine_type,
                                    options=options), indent=2)
