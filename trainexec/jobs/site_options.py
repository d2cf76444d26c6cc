"""What a site adds to a rendered job's pods, checked once from the `trainexec render` flags.

A TFJob's pods (`PodOptions`): PersistentVolumeClaims mounted in every
replica's `tensorflow` container (`--volume CLAIM:/PATH`, e.g. the shared
file system holding `model_dir`), GPUs for the training replicas (`--gpus N`:
`resources.limits["nvidia.com/gpu"]` of the chief, master and workers; ps and
evaluator get none), the pods' service account (`--service-account NAME`:
`serviceAccountName`) and annotations on every pod template (`--annotation
KEY=VALUE`, e.g. Istio's `sidecar.istio.io/inject=false`).

A Vertex AI CustomJob (`VertexOptions`): an accelerator on the training pools
(`--accelerator TYPE:COUNT`: `machineSpec.acceleratorType` and
`acceleratorCount` of pool 0 and the workers' pool), the job's run-as service
account (`--service-account EMAIL`: `jobSpec.serviceAccount`), NFS shares in
every pool (`--nfs SERVER:/PATH:NAME`, mounted at `/mnt/nfs/NAME`) and the VPC
network they are reached through (`--network`: `jobSpec.network`).

Each `parse_*` / `check_*` raises ConfigError naming the flag, the value and the
fix; the dataclasses hold values already checked.

Example:
    ```python
    pods = PodOptions(volumes=parse_volumes(["shared-runs:/runs"]), gpus=1,
                      annotations=parse_annotations(["sidecar.istio.io/inject=false"]))
    pods.volumes[0].mount_path     # "/runs"
    ```
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from trainexec.errors import ConfigError

__all__ = ["GPU_RESOURCE", "NFS_ROOT", "NfsMount", "PodOptions", "VertexOptions", "Volume",
           "check_gpus", "check_k8s_service_account", "check_vertex_service_account",
           "parse_accelerator", "parse_annotations", "parse_nfs_mounts", "parse_volumes"]

GPU_RESOURCE = "nvidia.com/gpu"  # NVIDIA's device plugin's extended resource
NFS_ROOT = "/mnt/nfs"  # where Vertex AI mounts an NFS share (nfsMounts.mountPoint)

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_1123_LABEL = re.compile(_LABEL)
_DNS_1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_ACCELERATOR = re.compile(r"[A-Z][A-Z0-9_]*")
_DIRECTORY_NAME = re.compile(r"[A-Za-z0-9_][-A-Za-z0-9_.]*")
_MAX_SUBDOMAIN = 253
_MAX_LABEL = 63


@dataclasses.dataclass(frozen=True)
class Volume:
    """A PersistentVolumeClaim `claim`, the pod volume `name` it is, mounted at
    `mount_path` in the `tensorflow` container."""

    claim: str
    mount_path: str
    name: str


@dataclasses.dataclass(frozen=True)
class PodOptions:
    """What a TFJob's pod templates get besides the container (module doc)."""

    volumes: tuple[Volume, ...] = ()
    gpus: int = 0
    service_account: str | None = None
    annotations: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class NfsMount:
    """Vertex AI's `nfsMounts` entry: `server:path`, seen at /mnt/nfs/`mount_point`."""

    server: str
    path: str
    mount_point: str

    @property
    def local_path(self) -> str:
        return f"{NFS_ROOT}/{self.mount_point}"


@dataclasses.dataclass(frozen=True)
class VertexOptions:
    """What a Vertex AI CustomJob's pools and jobSpec get besides the containers."""

    accelerator_type: str | None = None
    accelerator_count: int = 0
    service_account: str | None = None
    nfs_mounts: tuple[NfsMount, ...] = ()
    network: str | None = None


def _subdomain(value: str) -> bool:
    return len(value) <= _MAX_SUBDOMAIN and bool(_DNS_1123_SUBDOMAIN.fullmatch(value))


def parse_volumes(values: Sequence[str]) -> tuple[Volume, ...]:
    """`--volume CLAIM:/MOUNT/PATH` flags as volumes (each named after its claim when
    that is a DNS-1123 label, else `volume-I`)."""
    volumes: list[Volume] = []
    for i, value in enumerate(values):
        claim, sep, path = value.partition(":")
        example = "e.g. --volume shared-runs:/runs"
        if not sep or not claim or not path:
            raise ConfigError(f"--volume {value!r} is not CLAIM:/MOUNT/PATH: give the "
                              f"PersistentVolumeClaim and where to mount it, {example}")
        if not _subdomain(claim):
            raise ConfigError(f"--volume {value!r}: {claim!r} is not a PersistentVolumeClaim "
                              "name (lowercase letters, digits, '-' and '.', starting and "
                              f"ending with a letter or digit), {example}")
        if not path.startswith("/") or ":" in path or ".." in path.split("/"):
            raise ConfigError(f"--volume {value!r}: the mount path {path!r} must be absolute, "
                              f"without ':' or '..', {example}")
        path = path.rstrip("/") or "/"
        if path == "/":
            raise ConfigError(f"--volume {value!r}: a volume cannot be mounted at /: give "
                              f"a directory, {example}")
        for other in volumes:
            if other.mount_path == path:
                raise ConfigError(f"--volume {value!r}: {path} is already the mount path "
                                  f"of --volume {other.claim}:{other.mount_path}: give each "
                                  "volume its own path")
        taken = {v.name for v in volumes}
        name = claim if (_DNS_1123_LABEL.fullmatch(claim) and len(claim) <= _MAX_LABEL
                         and claim not in taken) else f"volume-{i}"
        number = i
        while name in taken:  # a claim already called volume-N: the next free number
            number += 1
            name = f"volume-{number}"
        volumes.append(Volume(claim, path, name))
    return tuple(volumes)


def check_gpus(gpus: int) -> None:
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise ConfigError(f"--gpus {gpus} is not a GPU count: give 0 (none) or more per "
                          "training replica, e.g. --gpus 1")


def check_k8s_service_account(name: str | None) -> None:
    if name is not None and not _subdomain(name):
        raise ConfigError(f"--service-account {name!r} is not a Kubernetes service account "
                          "name: lowercase letters, digits, '-' and '.', starting and ending "
                          "with a letter or digit, e.g. --service-account training-runner")


def parse_annotations(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`--annotation KEY=VALUE` flags as (key, value) pairs; a key given twice keeps
    the last value."""
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        example = "e.g. --annotation sidecar.istio.io/inject=false"
        if not sep:
            raise ConfigError(f"--annotation {value!r} has no '=': give KEY=VALUE, {example}")
        prefix, slash, name = key.rpartition("/")
        if ((slash and not (prefix and _subdomain(prefix)))
                or len(name) > _MAX_LABEL or not _QUALIFIED_NAME.fullmatch(name)):
            raise ConfigError(f"--annotation {value!r}: {key!r} is not an annotation key: "
                              "[PREFIX/]NAME, NAME at most 63 letters, digits, '-', '_' and "
                              "'.', starting and ending with a letter or digit, PREFIX a DNS "
                              f"name, {example}")
        pairs[key] = text
    return tuple(pairs.items())


def parse_accelerator(value: str | None) -> tuple[str | None, int]:
    """`--accelerator TYPE:COUNT` as (TYPE, COUNT); (None, 0) without the flag."""
    if value is None:
        return None, 0
    kind, sep, count = value.partition(":")
    example = "e.g. --accelerator NVIDIA_TESLA_T4:1"
    if (not _ACCELERATOR.fullmatch(kind) or not sep or not (count.isascii() and count.isdigit())
            or int(count) < 1):
        raise ConfigError(f"--accelerator {value!r} is not TYPE:COUNT: give Vertex AI's "
                          "accelerator type (capitals, as in its AcceleratorType list) and "
                          f"how many each training replica gets (1 or more), {example}")
    return kind, int(count)


def check_vertex_service_account(email: str | None) -> None:
    if email is None:
        return
    name, at, domain = email.partition("@")
    if not name or not at or "." not in domain or "@" in domain or any(
            c.isspace() for c in email):
        raise ConfigError(f"--service-account {email!r} is not a service account's email: "
                          "give the account the job runs as, e.g. --service-account "
                          "trainer@my-project.iam.gserviceaccount.com")


def parse_nfs_mounts(values: Sequence[str]) -> tuple[NfsMount, ...]:
    """`--nfs SERVER:/PATH:NAME` flags as Vertex AI NFS mounts (at /mnt/nfs/NAME)."""
    mounts: list[NfsMount] = []
    for value in values:
        server, _, rest = value.partition(":")
        path, sep, name = rest.rpartition(":")
        example = "e.g. --nfs 10.0.0.2:/vol1:runs (seen at /mnt/nfs/runs)"
        if not server or not sep or not path.startswith("/") or not name:
            raise ConfigError(f"--nfs {value!r} is not SERVER:/PATH:NAME: give the NFS "
                              "server's address, the share's absolute path and the mount "
                              f"point's name, {example}")
        if not _DIRECTORY_NAME.fullmatch(name) or name in (".", ".."):
            raise ConfigError(f"--nfs {value!r}: {name!r} is not a directory name (letters, "
                              f"digits, '-', '_' and '.', no '/'), {example}")
        if any(m.mount_point == name for m in mounts):
            raise ConfigError(f"--nfs {value!r}: {NFS_ROOT}/{name} is already mounted: give "
                              "each share its own NAME")
        mounts.append(NfsMount(server, path, name))
    return tuple(mounts)
