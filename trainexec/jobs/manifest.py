"""Reading a TFJob manifest into a `JobShape`, for `trainexec launch --from FILE.yaml`.

`read_manifest(path)` loads the file's YAML documents (a rendered file has the
TFJob and its NetworkPolicy; other kinds are left out), checks the TFJob with
`trainexec.jobs.manifest_rules` and refuses it with every problem at its field
(`spec.tfReplicaSpecs.Workr: ... did you mean Worker?`), as a ConfigError,
before anything starts. What it keeps, as the operator reads it:

* each replica type, as a role: its `replicas` (default 1), its
  `restartPolicy` (default Never), and its `tensorflow` container's `command` +
  `args` and `env` (not the image; a role with no `command` runs the image's
  entrypoint, which only `-- COMMAND` can stand in for here: `require_commands`);
* `runPolicy.cleanPodPolicy` (default None) and `successPolicy` (default ""),
  `backoffLimit` and `activeDeadlineSeconds`, `enableDynamicWorker`;
* the TF port of each type (the container port named `tfjob-port`, default 2222).

What a local run cannot do is told in `notes`: env values Kubernetes fills in
(`valueFrom`), other containers and init containers, mounted volumes.

Example:
    ```python
    manifest = read_manifest("job.yaml")
    manifest.shape.role("worker").count            # 2
    shape = manifest.shape.with_command(["python", "job.py"])
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from trainexec.records.liveness import POD_UID_VARIABLE
from trainexec.errors import ConfigError
from trainexec.jobs.manifest_rules import check_tfjob
from trainexec.jobs.naming import (CONTAINER_NAME, DEFAULT_PORT, PORT_NAME, replica_type,
                                   task_type_of)
from trainexec.jobs.policies import RunPolicies
from trainexec.jobs.shape import JobShape, Role
from trainexec.jobs.yaml_text import load_documents

__all__ = ["Manifest", "manifest_from_document", "parse_manifest", "read_manifest",
           "require_commands"]

_DEFAULT_RESTART_POLICY = "Never"  # the operator's default for a replica spec


@dataclasses.dataclass(frozen=True)
class Manifest:
    """A checked TFJob: its shape (roles `where` = their field path), run policies,
    TF ports by task type, and what a local run leaves out (`notes`)."""

    source: str
    shape: JobShape
    namespace: str = "default"
    policies: RunPolicies = RunPolicies()
    ports: dict[str, int] = dataclasses.field(default_factory=dict)
    dynamic_workers: bool = False  # enableDynamicWorker: sparse TF_CONFIG
    backoff_limit: int | None = None
    active_deadline_secs: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.shape.name


def _container(pod: dict) -> tuple[int, dict]:
    return next((i, c) for i, c in enumerate(pod["containers"])
                if c.get("name") == CONTAINER_NAME)


def _role(key: str, replica: dict, notes: list[str]) -> tuple[Role, int]:
    where = f"spec.tfReplicaSpecs.{key}"
    pod = replica["template"]["spec"]
    index, container = _container(pod)
    path = f"{where}.template.spec.containers[{index}]"
    command = None
    if "command" in container:
        command = tuple(container["command"]) + tuple(container.get("args") or ())
    env = []
    for i, var in enumerate(container.get("env") or ()):
        if "valueFrom" in var and var.get("name") == POD_UID_VARIABLE:
            continue  # the pod's UID: a local task has none, and needs none
        if "valueFrom" in var:
            source = next(iter(var["valueFrom"]), "valueFrom")
            notes.append(f"{path}.env[{i}] ({var['name']}) comes from {source}, which only "
                         "Kubernetes fills in: unset here unless this shell sets it")
        else:
            env.append((var["name"], var.get("value", "")))
    for i, other in enumerate(pod["containers"]):
        if i != index:
            notes.append(f"{where}.template.spec.containers[{i}] ({other.get('name')}) runs "
                         "beside tensorflow on the cluster, not here")
    if pod.get("initContainers"):
        notes.append(f"{where}.template.spec.initContainers do not run here")
    if container.get("volumeMounts"):
        mounts = [str(m.get("mountPath")) for m in container["volumeMounts"]
                  if isinstance(m, dict)]
        notes.append(f"{path}.volumeMounts: nothing is mounted here: "
                     f"{', '.join(mounts)} {'is' if len(mounts) == 1 else 'are'} this "
                     "machine's own")
    port = next((p["containerPort"] for p in container.get("ports") or ()
                 if p.get("name") == PORT_NAME), DEFAULT_PORT)
    known = replica_type(key)
    assert known is not None, "check_tfjob refuses a replica type it does not know"
    role = Role(task_type_of(known),
                replica.get("replicas", 1), command, tuple(env),
                replica.get("restartPolicy", _DEFAULT_RESTART_POLICY), where)
    return role, port


def manifest_from_document(document: Any, source: str = "<manifest>") -> Manifest:
    """The `Manifest` of one parsed TFJob; ConfigError listing every problem."""
    problems = check_tfjob(document)
    if problems:
        raise ConfigError(f"{source} is not a TFJob the training operator (v1.9) accepts:\n"
                          + "\n".join(f"  {problem}" for problem in problems))
    spec = document["spec"]
    notes: list[str] = []
    roles, ports = [], {}
    for key, replica in spec["tfReplicaSpecs"].items():
        role, port = _role(key, replica, notes)
        roles.append(role)
        ports[role.task_type] = port
    run_policy = spec.get("runPolicy") or {}
    policies = RunPolicies(run_policy.get("cleanPodPolicy", "None"),
                           spec.get("successPolicy", ""))
    metadata = document["metadata"]
    return Manifest(source, JobShape(tuple(roles), metadata["name"]),
                    metadata.get("namespace", "default"), policies, ports,
                    spec.get("enableDynamicWorker", False), run_policy.get("backoffLimit"),
                    run_policy.get("activeDeadlineSeconds"), tuple(notes))


def parse_manifest(text: str, source: str = "<manifest>") -> Manifest:
    """The TFJob among the YAML documents of `text` (see the module doc)."""
    documents = load_documents(text, source)
    if len(documents) == 1:
        return manifest_from_document(documents[0], source)
    tfjobs = [doc for doc in documents if isinstance(doc, dict) and doc.get("kind") == "TFJob"]
    if len(tfjobs) != 1:
        kinds = ", ".join(str(doc.get("kind")) if isinstance(doc, dict) else type(doc).__name__
                          for doc in documents) or "none"
        raise ConfigError(f"{source} has {len(tfjobs)} TFJob documents among "
                          f"{len(documents)} (kinds: {kinds}): give a file with one TFJob")
    return manifest_from_document(tfjobs[0], source)


def read_manifest(path: str) -> Manifest:
    """The TFJob in the YAML file at `path`; ConfigError if it cannot be read or used."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"cannot read {path}: it is not UTF-8 text ({err.reason} at byte "
                          f"{err.start}); give a YAML file") from None
    return parse_manifest(text, path)


def require_commands(shape: JobShape, source: str, example: Sequence[str] = ()) -> None:
    """ConfigError naming each role with tasks but no command (its image's entrypoint
    would run on the cluster), asking for `-- COMMAND`."""
    missing = shape.without_command()
    if missing:
        fields = ", ".join(role.where or role.task_type for role in missing)
        run = " ".join(example) or "python job.py"
        raise ConfigError(f"{fields} in {source} {'has' if len(missing) == 1 else 'have'} "
                          f"no command: on the cluster the image's entrypoint runs, which "
                          f"is not known here. Pass the command after --, e.g. trainexec "
                          f"launch --from {source} -- {run}")
