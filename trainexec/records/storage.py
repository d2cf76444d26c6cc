"""What kind of storage holds `model_dir`, and how late another host's writes may show.

Every task of a job shares `model_dir`. What a task sees of another host's
writes depends on the storage:

| kind | examples | another host's write is seen | inotify sees it |
| --- | --- | --- | --- |
| `local` | a local disk (one machine: `trainexec launch`) | at once | yes |
| `network` | NFS, a FUSE mount (gcsfuse's `/gcs/`, bindfs), CIFS, Lustre, 9p | up to the client's attribute and lookup cache later: NFS caches up to `acdirmax` (60 s by default) | no: polled |
| `object` | `gs://` (Google Cloud Storage: strongly consistent reads and listings) | up to TensorFlow's stat cache later (`GCS_STAT_CACHE_MAX_AGE`, 5 s by default) | no: polled |

`visibility_secs` is that delay's bound; the tasks that wait for a record
another host writes (the evaluator for the chief's completion record, a ps for
the training tasks' finished records) add it to their waits, so a record seen
late never makes a non-final checkpoint final. `TRAINEXEC_STORAGE_VISIBILITY_SECS`
sets it for network file systems (e.g. 3 for NFS mounted with `actimeo=3`, 0
with `noac` or `lookupcache=none`). `s3://` has no file system in TensorFlow
2.16 and later (tensorflow-io stops at TensorFlow 2.16): `check_supported`
says so before anything starts.

Example:

```python
where = storage_of("/mnt/nfs/run1")    # Storage(kind="network", file_system="nfs4", ...)
where.visibility_secs                  # 60.0
```
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Mapping

from trainexec.env_settings import seconds_setting
from trainexec.errors import ConfigError

__all__ = [
    "LOCAL",
    "NETWORK",
    "NETWORK_VISIBILITY_SECS",
    "OBJECT",
    "VISIBILITY_VARIABLE",
    "Storage",
    "check_supported",
    "storage_of",
]

logger = logging.getLogger(__name__)

LOCAL, NETWORK, OBJECT = "local", "network", "object"
VISIBILITY_VARIABLE = "TRAINEXEC_STORAGE_VISIBILITY_SECS"
# NFS's default attribute cache for directories (acdirmax), which also bounds how
# long a cached "no such file" lasts (lookupcache=all).
NETWORK_VISIBILITY_SECS = 60.0

_NETWORK_TYPES = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "ceph",
                  "glusterfs", "9p", "virtiofs", "afs", "beegfs", "wekafs")


@dataclasses.dataclass(frozen=True)
class Storage:
    """Where a path lives: `kind` (LOCAL, NETWORK or OBJECT), the file system's
    name (`ext4`, `nfs4`, `fuse.gcsfuse`, `gs`) and `visibility_secs`, how late
    another host's write may be seen there."""

    kind: str
    file_system: str
    visibility_secs: float

    @property
    def inotify_sees_other_hosts(self) -> bool:
        return self.kind == LOCAL

    def describe(self) -> str:
        return f"{self.file_system} ({self.kind})"


def _mount_of(path: str, mountinfo: str) -> str:
    """The file system type of the mount holding `path`, from /proc's mountinfo."""
    path = os.path.realpath(path)
    best, best_type = "", ""
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ")
        fs_type = line.split(" - ", 1)[1].split()[0]
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, best_type = point, fs_type
    return best_type


def storage_of(path: str, environ: Mapping[str, str] | None = None,
               mountinfo: str | None = None) -> Storage:
    """The storage holding `path` (a local path or a URL). See the module doc."""
    environ = os.environ if environ is None else environ
    path = os.fspath(path)
    if "://" in path:
        scheme = path.split("://", 1)[0]
        late = 0.0
        if scheme == "gs":  # TensorFlow's GCS client caches what stat() returned
            try:
                late = max(0.0, float(environ.get("GCS_STAT_CACHE_MAX_AGE", "5")))
            except ValueError:
                late = 5.0
        return Storage(OBJECT, scheme, late)
    if mountinfo is None:
        try:
            with open("/proc/self/mountinfo") as f:
                mountinfo = f.read()
        except OSError:
            mountinfo = ""
    fs_type = _mount_of(os.path.abspath(path), mountinfo) or "unknown"
    if fs_type.startswith("fuse") or fs_type.split(".")[0] in _NETWORK_TYPES:
        return Storage(NETWORK, fs_type, _visibility(environ))
    return Storage(LOCAL, fs_type, 0.0)


def _visibility(environ: Mapping[str, str]) -> float:
    return seconds_setting(VISIBILITY_VARIABLE, NETWORK_VISIBILITY_SECS,
                           "how late another host's write may be seen on this network "
                           "file system", environ)


def check_supported(path: str, field: str = "model_dir") -> None:
    """Raises ConfigError when TensorFlow has no file system for `path`'s scheme."""
    path = os.fspath(path)
    if "://" not in path:
        return
    scheme = path.split("://", 1)[0]
    import tensorflow as tf

    schemes = getattr(tf.io.gfile, "get_registered_schemes", None)
    if schemes is None or scheme in schemes():
        return
    hint = (" TensorFlow 2.16 and later have no s3:// file system (tensorflow-io, which "
            "added it, stops at TensorFlow 2.16): mount the bucket (e.g. mountpoint-s3, "
            "s3fs) and give a local path, or use gs:// or a network file system."
            if scheme == "s3" else "")
    raise ConfigError(f"{field} {path!r}: TensorFlow {tf.__version__} has no file system "
                      f"for {scheme}:// (it has {', '.join(sorted(schemes()))}).{hint}")
