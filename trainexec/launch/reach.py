"""Whether the tasks can reach their `model_dir`, decided before any task starts.

A job's `model_dir` is in its command (`--model-dir gs://bucket/run`). Tasks in the
launcher's private network namespace (the default, `trainexec.launch.network`) have
loopback only: a `model_dir` on a remote file system (`gs://`, `s3://`, `hdfs://`,
`http(s)://`) is out of their reach, and the job would fail after its tasks had
started, on a "could not resolve host" deep in TensorFlow's logs. `trainexec launch`
says so first and exits 2, naming the two ways out: a local directory (for a manifest,
`--model-dir DIR` replaces the one in every replica's command), or `--network host`.

Example:
    ```python
    remote_model_dirs(job)               # [("spec.tfReplicaSpecs.Worker", "gs://b/run")]
    job = with_model_dir(job, "/tmp/run")  # every role's --model-dir is /tmp/run
    ```
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from trainexec.errors import ConfigError
from trainexec.jobs.shape import JobShape

__all__ = ["MODEL_DIR_FLAGS", "REMOTE_SCHEMES", "command_model_dirs", "remote_model_dirs",
           "unreachable_message", "with_model_dir"]

MODEL_DIR_FLAGS = ("--model-dir", "--model_dir")
# File systems TensorFlow reaches over the network (s3:// and hdfs:// through
# tensorflow-io on current TensorFlow).
REMOTE_SCHEMES = ("gs://", "s3://", "hdfs://", "http://", "https://")


def command_model_dirs(command: Sequence[str]) -> list[str]:
    """The values the command gives its model_dir flags (`--model-dir X`,
    `--model-dir=X`, or `--model_dir`)."""
    found = []
    for i, word in enumerate(command):
        flag, equals, value = word.partition("=")
        if flag in MODEL_DIR_FLAGS:
            if equals:
                found.append(value)
            elif i + 1 < len(command):
                found.append(command[i + 1])
    return found


def _replaced(command: Sequence[str], directory: str) -> tuple[str, ...]:
    words, skip = [], False
    for i, word in enumerate(command):
        if skip:
            skip = False
            continue
        flag, equals, _ = word.partition("=")
        if flag in MODEL_DIR_FLAGS:
            words += [f"{flag}={directory}"] if equals else [flag, directory]
            skip = not equals and i + 1 < len(command)
        else:
            words.append(word)
    return tuple(words)


def with_model_dir(job: JobShape, directory: str) -> JobShape:
    """`job` with `directory` as every role's model_dir (the value of its commands'
    `--model-dir`). ConfigError when no role's command has such a flag."""
    if not any(command_model_dirs(role.command or ()) for role in job.roles if role.count):
        raise ConfigError(f"--model-dir {directory}: no replica's command has a --model-dir "
                          "(or --model_dir) to replace: give the program's own flag in "
                          "the command after --")
    return dataclasses.replace(job, roles=tuple(
        dataclasses.replace(role, command=_replaced(role.command, directory))
        if role.command is not None else role for role in job.roles))


def remote_model_dirs(job: JobShape) -> list[tuple[str, str]]:
    """(role, model_dir) for each role whose command's model_dir is on a remote file
    system; the role as its builder named it (`where`: a manifest's field), else its
    task type."""
    return [(role.where or role.task_type, value) for role in job.roles if role.count
            for value in command_model_dirs(role.command or ())
            if value.lower().startswith(REMOTE_SCHEMES)]


def unreachable_message(found: list[tuple[str, str]], source: str | None) -> str:
    """Why the job cannot run in the private network, and the two fixes: for a
    manifest (`source`), the launcher's `--model-dir`; else the command's own."""
    values = list(dict.fromkeys(value for _, value in found))
    roles = ", ".join(dict.fromkeys(role.rpartition(".")[2] for role, _ in found))
    scheme = values[0].split("://")[0] + "://"
    local = "/tmp/" + values[0].rstrip("/").rpartition("/")[2]
    where = f"{source}: " if source else ""
    fix = (f"--model-dir {local} (it replaces the --model-dir of every replica's command)"
           if source else f"a local directory in the command (--model-dir {local})")
    return (f"{where}model_dir {', '.join(values)} ({roles}) is out of reach here: the tasks "
            f"run in a private network namespace with loopback only (the default "
            f"--network private), so none could reach {scheme}. Run it here with {fix}, "
            f"or on this machine's network with --network host (where this machine "
            f"reaches {scheme} with its own credentials)")
