"""The names Kubernetes and the TFJob operator accept, and the ones the operator looks for.

A TFJob's name must be a DNS-1035 label (the operator's admission webhook refuses
anything else: its pods and services are named after it); a namespace or a
container name a DNS-1123 label. The operator finds the training container by
its name (`tensorflow`) and the TensorFlow port by its name (`tfjob-port`,
default 2222), and reads the replica types in any case (`Worker`, `worker`),
writing them lowercased in TF_CONFIG.

Each check returns the problem as words ("is not a DNS-1035 label: ...") or
None, so that each caller tells it in its own terms (a flag, a manifest field).

Example:
    ```python
    name_problem("Demo_1")          # "'Demo_1' is not a DNS-1035 label: ..."
    replica_type("worker")          # "Worker"
    task_type_of("PS")              # "ps"
    ```
"""

from __future__ import annotations

import difflib
import re

from trainexec.task_types import CHIEF, EVALUATOR, MASTER, PS, WORKER

__all__ = ["CONTAINER_NAME", "DEFAULT_PORT", "JOB_NAME_LABEL", "PORT_NAME", "REPLICA_TYPES",
           "closest", "env_name_problem", "label_problem", "name_problem", "replica_type",
           "task_type_of"]

CONTAINER_NAME = "tensorflow"  # the container the operator runs and gives TF_CONFIG
PORT_NAME = "tfjob-port"  # the container port the operator puts in TF_CONFIG
DEFAULT_PORT = 2222
JOB_NAME_LABEL = "training.kubeflow.org/job-name"  # on every pod of the job

# TFJob's replica types as the operator spells them, by TF_CONFIG task type.
REPLICA_TYPES = {CHIEF: "Chief", MASTER: "Master", WORKER: "Worker", PS: "PS",
                 EVALUATOR: "Evaluator"}

_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_MAX_LABEL = 63


def replica_type(name: str) -> str | None:
    """The operator's spelling of a replica type given in any case ("ps" -> "PS"),
    or None if it is none of Chief, Master, Worker, PS, Evaluator."""
    return REPLICA_TYPES.get(name.lower()) if isinstance(name, str) else None


def task_type_of(replica: str) -> str:
    """The TF_CONFIG task type of a replica type: the type lowercased ("PS" -> "ps")."""
    return replica.lower()


def closest(word: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """The choice `word` most likely misspells ("Workr" -> "Worker"), ignoring case."""
    lowered = {choice.lower(): choice for choice in choices}
    match = difflib.get_close_matches(str(word).lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def name_problem(name: object) -> str | None:
    """Why `name` cannot name a TFJob (a DNS-1035 label), or None."""
    if not isinstance(name, str) or not name:
        return f"{name!r} is not a name: give lowercase letters, digits and '-', e.g. 'mnist-1'"
    if len(name) > _MAX_LABEL:
        return (f"{name!r} has {len(name)} characters: a TFJob name is a DNS-1035 label "
                f"of at most {_MAX_LABEL}")
    if not _DNS_1035.fullmatch(name):
        suggestion = re.sub(r"[^-a-z0-9]+", "-", name.lower()).strip("-")
        suggestion = re.sub(r"^[-0-9]+", "", suggestion)[:_MAX_LABEL].rstrip("-") or "job"
        return (f"{name!r} is not a DNS-1035 label: use lowercase letters, digits and '-', "
                f"starting with a letter and ending with a letter or digit, "
                f"e.g. {suggestion!r}")
    return None


def label_problem(name: object, what: str = "namespace") -> str | None:
    """Why `name` cannot be a namespace or container name (a DNS-1123 label), or None."""
    if not isinstance(name, str) or not name:
        return f"{name!r} is not a {what}: give lowercase letters, digits and '-'"
    if len(name) > _MAX_LABEL or not _DNS_1123.fullmatch(name):
        return (f"{name!r} is not a DNS-1123 label: a {what} is lowercase letters, digits "
                f"and '-', at most {_MAX_LABEL} characters, starting and ending with a "
                "letter or digit")
    return None


def env_name_problem(name: object) -> str | None:
    """Why `name` cannot name an environment variable of a container, or None."""
    if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
        return (f"{name!r} is not an environment variable name: use letters, digits, "
                "'_', '-' and '.', not starting with a digit")
    if name == "TF_CONFIG":
        return ("TF_CONFIG is set for every pod by the training operator (and for every "
                "task by trainexec launch): leave it out")
    return None
