"""The rules a TFJob manifest must keep, checked before anything runs, each problem at its field.

The training operator's generated CRD schema checks almost nothing: any
replica key, any restart policy string. A typo (`Workr`, `Onfailure`) is
accepted by `kubectl apply` and fails later, or never runs. These are the
rules the operator (v1.9) acts on, from its API types and admission webhook:

* `apiVersion: kubeflow.org/v1`, `kind: TFJob`; `metadata.name` a DNS-1035 label,
  `metadata.namespace` a DNS-1123 label, labels and annotations strings;
* `spec` has only `runPolicy`, `successPolicy` ("" or AllWorkers),
  `enableDynamicWorker` and `tfReplicaSpecs`; `runPolicy.cleanPodPolicy` is
  None, Running or All, its counts are integers;
* `tfReplicaSpecs` names replica types Chief, Master, Worker, PS, Evaluator
  (any case, each once), not both Chief and Master; each has `replicas` >= 0,
  `restartPolicy` Always, OnFailure, Never or ExitCode, and a pod template with
  exactly one container named `tensorflow`; every container has a name and an
  image, its command, args and env values are strings, its ports valid.

`check_tfjob(document)` returns every `Problem` in document order, each with its
field path (`spec.tfReplicaSpecs.Workr`) and the fix in words ("did you mean
Worker?"). The pod template beyond the containers' name, image, command, args,
env and ports is left to Kubernetes.

Example:
    ```python
    for problem in check_tfjob(yaml.safe_load(text)):
        print(problem)   # spec.tfReplicaSpecs.Workr: 'Workr' is not a TFJob replica type: ...
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, TypeGuard

from trainexec.jobs.naming import (CONTAINER_NAME, REPLICA_TYPES, closest, label_problem,
                                   name_problem, replica_type)
from trainexec.jobs.policies import CLEAN_POD_POLICIES, SUCCESS_POLICIES

__all__ = ["RESTART_POLICIES", "Problem", "check_tfjob"]

RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
_POD_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_SPEC_KEYS = ("runPolicy", "successPolicy", "enableDynamicWorker", "tfReplicaSpecs")
_RUN_POLICY_INTS = {"ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 1,
                    "backoffLimit": 0}
_RUN_POLICY_KEYS = ("cleanPodPolicy", *_RUN_POLICY_INTS, "schedulingPolicy", "suspend",
                    "managedBy")
_MANAGED_BY = ("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")
_REPLICA_KEYS = ("replicas", "restartPolicy", "template")
_ENV_KEYS = ("name", "value", "valueFrom")
_PORT_KEYS = ("name", "containerPort", "protocol", "hostPort", "hostIP")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_MAX_PORT_NAME = 15


@dataclasses.dataclass(frozen=True)
class Problem:
    """What is wrong at `path` ("spec.tfReplicaSpecs.Worker.restartPolicy") and the fix."""

    path: str
    text: str

    def __str__(self) -> str:
        return f"{self.path or '(the document)'}: {self.text}"


def _one_of(value: Any, choices: tuple[str, ...], what: str) -> str:
    shown = ", ".join(repr(c) if c == "" else c for c in choices)
    text = f"{value!r} is not {what}: use one of {shown}"
    guess = closest(value, [c for c in choices if c]) if isinstance(value, str) else None
    return text + (f" (did you mean {guess}?)" if guess and guess != value else "")


def _unknown_key(key: Any, allowed: tuple[str, ...], what: str) -> str:
    guess = closest(key, allowed) if isinstance(key, str) else None
    hint = f"did you mean {guess}?" if guess else f"use {', '.join(allowed)}"
    return f"{key!r} is not a field of {what}: {hint}"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class _Checker:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, text: str) -> None:
        self.problems.append(Problem(path, text))

    def mapping(self, value: Any, path: str, what: str) -> bool:
        if isinstance(value, dict):
            return True
        self.add(path, f"{what} must be a mapping of fields, not {type(value).__name__} "
                 f"{value!r}")
        return False

    def strings(self, value: Any, path: str, what: str) -> None:
        if not isinstance(value, list):
            self.add(path, f"{what} must be a list of strings, e.g. [\"python\", \"job.py\"]")
            return
        for i, item in enumerate(value):
            if not isinstance(item, str):
                self.add(f"{path}[{i}]", f"{item!r} is not a string: quote it, "
                         f"e.g. \"{item}\"")

    # -- the document ------------------------------------------------------------------
    def document(self, doc: Any) -> None:
        if not self.mapping(doc, "", "a TFJob manifest"):
            return
        if doc.get("apiVersion") != "kubeflow.org/v1":
            self.add("apiVersion", f"{doc.get('apiVersion')!r}: a TFJob of the training "
                     "operator v1.9 has apiVersion kubeflow.org/v1")
        if doc.get("kind") != "TFJob":
            self.add("kind", f"{doc.get('kind')!r}: this reads a TFJob (kind: TFJob)")
        self.metadata(doc.get("metadata"))
        if "spec" not in doc:
            self.add("spec", "missing: a TFJob needs spec.tfReplicaSpecs")
        elif self.mapping(doc["spec"], "spec", "spec"):
            self.spec(doc["spec"])

    def metadata(self, metadata: Any) -> None:
        if metadata is None:
            self.add("metadata.name", "missing: give the job a name, e.g. metadata: "
                     "{name: mnist}")
            return
        if not self.mapping(metadata, "metadata", "metadata"):
            return
        if "name" not in metadata:
            self.add("metadata.name", "missing: give the job a name (a DNS-1035 label, "
                     "e.g. mnist)")
        else:
            problem = name_problem(metadata["name"])
            if problem:
                self.add("metadata.name", problem)
        if "namespace" in metadata:
            problem = label_problem(metadata["namespace"], "namespace")
            if problem:
                self.add("metadata.namespace", problem)
        for field in ("labels", "annotations"):
            if field in metadata and self.mapping(metadata[field], f"metadata.{field}", field):
                for key, value in metadata[field].items():
                    if not isinstance(value, str):
                        self.add(f"metadata.{field}.{key}", f"{value!r} is not a string: "
                                 f"quote it, e.g. \"{str(value).lower()}\"")

    def spec(self, spec: dict) -> None:
        for key in spec:
            if key in _SPEC_KEYS:
                continue
            if key in _RUN_POLICY_KEYS:
                self.add(f"spec.{key}", f"{key} goes under spec.runPolicy in kubeflow.org/v1: "
                         f"move it to spec.runPolicy.{key}")
            else:
                self.add(f"spec.{key}", _unknown_key(key, _SPEC_KEYS, "a TFJob spec"))
        if "runPolicy" in spec and self.mapping(spec["runPolicy"], "spec.runPolicy",
                                                "runPolicy"):
            self.run_policy(spec["runPolicy"])
        if "successPolicy" in spec and spec["successPolicy"] not in SUCCESS_POLICIES:
            self.add("spec.successPolicy", _one_of(spec["successPolicy"], SUCCESS_POLICIES,
                                                   "a success policy"))
        if "enableDynamicWorker" in spec and not isinstance(spec["enableDynamicWorker"], bool):
            self.add("spec.enableDynamicWorker", f"{spec['enableDynamicWorker']!r}: "
                     "give true or false")
        if "tfReplicaSpecs" not in spec:
            self.add("spec.tfReplicaSpecs", "missing: give the replicas, e.g. "
                     "tfReplicaSpecs: {Chief: ..., Worker: ...}")
        elif self.mapping(spec["tfReplicaSpecs"], "spec.tfReplicaSpecs", "tfReplicaSpecs"):
            self.replica_specs(spec["tfReplicaSpecs"])

    def run_policy(self, run_policy: dict) -> None:
        path = "spec.runPolicy"
        for key, value in run_policy.items():
            where = f"{path}.{key}"
            if key not in _RUN_POLICY_KEYS:
                self.add(where, _unknown_key(key, _RUN_POLICY_KEYS, "runPolicy"))
            elif key == "cleanPodPolicy" and value not in CLEAN_POD_POLICIES:
                self.add(where, _one_of(value, CLEAN_POD_POLICIES, "a clean pod policy"))
            elif key in _RUN_POLICY_INTS and not (_is_int(value)
                                                  and value >= _RUN_POLICY_INTS[key]):
                self.add(where, f"{value!r}: give an integer >= {_RUN_POLICY_INTS[key]}")
            elif key == "suspend" and not isinstance(value, bool):
                self.add(where, f"{value!r}: give true or false")
            elif key == "schedulingPolicy":
                self.mapping(value, where, "schedulingPolicy")
            elif key == "managedBy" and value not in _MANAGED_BY:
                self.add(where, _one_of(value, _MANAGED_BY, "a managedBy value"))

    # -- replicas ----------------------------------------------------------------------
    def replica_specs(self, specs: dict) -> None:
        path = "spec.tfReplicaSpecs"
        if not specs:
            self.add(path, "no replicas: give at least one, e.g. Worker")
        seen: dict[str, str] = {}
        for key, replica in specs.items():
            where = f"{path}.{key}"
            canonical = replica_type(key)
            if canonical is None:
                self.add(where, _one_of(key, tuple(REPLICA_TYPES.values()),
                                        "a TFJob replica type"))
            elif canonical in seen:
                self.add(where, f"names the same replica type as {path}.{seen[canonical]} "
                         "(the operator reads them in any case): keep one")
            else:
                seen[canonical] = key
            if self.mapping(replica, where, f"replica spec {key}"):
                self.replica(replica, where)
        if "Chief" in seen and "Master" in seen:
            self.add(path, f"has both {seen['Chief']} and {seen['Master']}: the operator "
                     "allows one of them (either leads the job): keep Chief")

    def replica(self, replica: dict, path: str) -> None:
        for key in replica:
            if key not in _REPLICA_KEYS:
                self.add(f"{path}.{key}", _unknown_key(key, _REPLICA_KEYS, "a replica spec"))
        if "replicas" in replica and not (_is_int(replica["replicas"])
                                          and replica["replicas"] >= 0):
            self.add(f"{path}.replicas", f"{replica['replicas']!r} is not a count: give an "
                     "integer >= 0, unquoted, e.g. replicas: 2")
        if "restartPolicy" in replica and replica["restartPolicy"] not in RESTART_POLICIES:
            self.add(f"{path}.restartPolicy", _one_of(replica["restartPolicy"],
                                                      RESTART_POLICIES, "a restart policy"))
        template = replica.get("template")
        if template is None:
            self.add(f"{path}.template", "missing: give the pod template, with a container "
                     f"named {CONTAINER_NAME}")
            return
        if not self.mapping(template, f"{path}.template", "template"):
            return
        pod = template.get("spec")
        if pod is None:
            self.add(f"{path}.template.spec", "missing: give the pod spec, with a container "
                     f"named {CONTAINER_NAME}")
        elif self.mapping(pod, f"{path}.template.spec", "template.spec"):
            self.pod(pod, f"{path}.template.spec")

    def pod(self, pod: dict, path: str) -> None:
        if "restartPolicy" in pod and pod["restartPolicy"] not in _POD_RESTART_POLICIES:
            self.add(f"{path}.restartPolicy", _one_of(pod["restartPolicy"],
                                                      _POD_RESTART_POLICIES,
                                                      "a pod restart policy"))
        containers = pod.get("containers")
        where = f"{path}.containers"
        if not isinstance(containers, list) or not containers:
            self.add(where, f"give a list with one container named {CONTAINER_NAME}")
            return
        named = [c.get("name") for c in containers if isinstance(c, dict)]
        for i, container in enumerate(containers):
            if self.mapping(container, f"{where}[{i}]", "a container"):
                self.container(container, f"{where}[{i}]")
        count = named.count(CONTAINER_NAME)
        if count == 0:
            which = (f" (it is named {named[0]!r})" if len(named) == 1 and named[0]
                     else "")
            self.add(where, f"no container is named {CONTAINER_NAME}{which}: the operator "
                     f"runs and configures (TF_CONFIG, tfjob-port) only that one: name the "
                     f"training container {CONTAINER_NAME}")
        elif count > 1:
            self.add(where, f"{count} containers are named {CONTAINER_NAME}: keep one")

    def container(self, container: dict, path: str) -> None:
        if "name" not in container:
            self.add(f"{path}.name", f"missing: name the training container {CONTAINER_NAME}")
        else:
            problem = label_problem(container["name"], "container name")
            if problem:
                self.add(f"{path}.name", problem)
        image = container.get("image")
        if not isinstance(image, str) or not image:
            self.add(f"{path}.image", "missing: give the image to run, e.g. "
                     "image: gcr.io/my-project/train:1 (a local run does not use it, the "
                     "cluster does)")
        for field in ("command", "args"):
            if field in container:
                self.strings(container[field], f"{path}.{field}", field)
        if "env" in container:
            self.env(container["env"], f"{path}.env")
        if "ports" in container:
            self.ports(container["ports"], f"{path}.ports")

    def entries(self, value: Any, path: str, shape: str, what: str,
                keys: Any) -> Iterator[tuple[str, dict]]:
        """(path, entry) of each mapping in the list `value`, its unknown keys reported;
        a value that is not a list is reported as not `shape`."""
        if not isinstance(value, list):
            self.add(path, f"{path.rsplit('.', 1)[-1]} must be a list of {shape}")
            return
        for i, entry in enumerate(value):
            where = f"{path}[{i}]"
            if not self.mapping(entry, where, what):
                continue
            for key in entry:
                if key not in keys:
                    self.add(f"{where}.{key}", _unknown_key(key, keys, what))
            yield where, entry

    def env(self, env: Any, path: str) -> None:
        for where, var in self.entries(env, path, "{name: ..., value: ...}", "an env entry",
                                       _ENV_KEYS):
            if not isinstance(var.get("name"), str) or not var["name"]:
                self.add(f"{where}.name", "missing: name the variable")
            if "value" in var and not isinstance(var["value"], str):
                self.add(f"{where}.value", f"{var['value']!r} is not a string: quote it, "
                         f"e.g. value: \"{str(var['value']).lower()}\"")
            if "valueFrom" in var:
                self.mapping(var["valueFrom"], f"{where}.valueFrom", "valueFrom")

    def ports(self, ports: Any, path: str) -> None:
        for where, port in self.entries(ports, path,
                                        "{name: tfjob-port, containerPort: 2222}", "a port",
                                        _PORT_KEYS):
            number = port.get("containerPort")
            if not (_is_int(number) and 1 <= number <= 65535):
                self.add(f"{where}.containerPort", f"{number!r}: give a port number "
                         "1..65535, e.g. 2222")
            name = port.get("name")
            if name is not None and (not isinstance(name, str) or len(name) > _MAX_PORT_NAME):
                self.add(f"{where}.name", f"{name!r}: a port name is a string of at most "
                         f"{_MAX_PORT_NAME} characters, e.g. tfjob-port")
            if "protocol" in port and port["protocol"] not in _PROTOCOLS:
                self.add(f"{where}.protocol", _one_of(port["protocol"], _PROTOCOLS,
                                                      "a protocol"))


def check_tfjob(document: Any) -> list[Problem]:
    """Every problem of a TFJob manifest (parsed YAML or JSON), in document order."""
    checker = _Checker()
    checker.document(document)
    return checker.problems
