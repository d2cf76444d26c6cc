"""Where a lease lives: one small file, created only if absent, changed only if unchanged.

`trainexec.evaluation.lease` needs four operations on its file that no two
evaluators can interleave wrongly, on every storage a shared `model_dir` lives on:

| operation | local disk, NFS, FUSE views | `gs://` (Google Cloud Storage) |
| --- | --- | --- |
| create if absent | write a temporary file, hard-link it to the name (atomic on a local disk and on the NFS server) | upload with `ifGenerationMatch=0` |
| read | the text and a version (inode, size, modification time) | the text and the object's generation |
| replace if unchanged | compare the version, then rename over it | upload with `ifGenerationMatch=<generation>` |
| delete if unchanged | compare the version, then remove | delete with `ifGenerationMatch=<generation>` |

On `gs://` every operation is one request with a precondition the bucket
enforces, so exactly one of two evaluators started together holds the lease.
TensorFlow's own GCS file system cannot do that (its rename "without overwrite"
looks, then copies), so this uses the `google-cloud-storage` client
(`pip install "trainexec[gcs]"`). On a file system, "compare, then rename"
leaves a window of a few milliseconds; a lease is only replaced by its holder
(renewal) or after `stale_secs` of silence, so the window never matters there.
Other URL schemes (`hdfs://`, ...) fall back to TensorFlow's rename without
overwrite, read back, with a warning that it is not exclusive.

Example:

```python
store = lease_store("gs://bucket/model/trainexec/eval/evaluator_lease.json")
if store.create('{"token": "a"}'):
    text, version = store.read()
    store.replace('{"token": "a", "renewals": 1}', version)
```
"""

from __future__ import annotations

import dataclasses
import logging
import os
import uuid
from typing import Any, Protocol

from trainexec.errors import ConfigError

__all__ = ["FileLeaseStore", "GcsLeaseStore", "LeaseStore", "Stored", "lease_store"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Stored:
    """What a read found: the text, an opaque version, the modification time (s)."""

    text: str
    version: Any
    mtime: float


class LeaseStore(Protocol):
    """The four operations a lease needs (see the module doc)."""

    path: str

    def create(self, text: str) -> bool:
        """Writes `text` unless the file exists; True if this call created it."""

    def read(self) -> Stored | None:
        """The file's text and version; None when there is none."""

    def replace(self, text: str, version: Any) -> bool:
        """Writes `text` if the file is still at `version`; True if it did."""

    def delete(self, version: Any) -> bool:
        """Removes the file if it is still at `version`; True if it did."""


def lease_store(path: str) -> LeaseStore:
    """The store for `path`: `gs://` objects, local (or mounted) files, or another
    TensorFlow file system."""
    if path.startswith("gs://"):
        return GcsLeaseStore(path)
    if "://" not in path:
        return FileLeaseStore(path)
    return _TensorFlowStore(path)


class FileLeaseStore:
    """A lease file on a local or mounted (NFS, FUSE) file system."""

    def __init__(self, path: str) -> None:
        self.path = path

    def create(self, text: str) -> bool:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        tmp = _temporary_beside(self.path)
        with open(tmp, "w") as f:
            f.write(text)
        try:
            try:
                os.link(tmp, self.path)  # atomic, and fails if the lease exists
                return True
            except FileExistsError:
                return False
            except OSError:  # no hard links here (some FUSE file systems)
                pass
            try:  # exclusive, but a reader may see it empty for a moment
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w") as f:
                f.write(text)
            return True
        finally:
            try:
                os.remove(tmp)
            except FileNotFoundError:
                pass

    def read(self) -> Stored | None:
        try:
            with open(self.path) as f:
                stat = os.fstat(f.fileno())
                text = f.read()
        except FileNotFoundError:
            return None
        return Stored(text, (stat.st_ino, stat.st_size, stat.st_mtime_ns),
                      stat.st_mtime_ns / 1e9)

    def _version(self) -> Any:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def replace(self, text: str, version: Any) -> bool:
        if self._version() != version:
            return False
        from trainexec.records.layout import atomic_write_text

        atomic_write_text(self.path, text)
        return True

    def delete(self, version: Any) -> bool:
        if self._version() != version:
            return False
        try:
            os.remove(self.path)
        except FileNotFoundError:
            return False
        return True


class GcsLeaseStore:
    """A lease object on Google Cloud Storage, every change under a generation
    precondition (see the module doc)."""

    def __init__(self, path: str, client: Any = None) -> None:
        self.path = path
        bucket, _, name = path[len("gs://"):].partition("/")
        if not bucket or not name:
            raise ConfigError(f"lease path {path!r} is not gs://BUCKET/OBJECT")
        self._bucket_name, self._name = bucket, name
        self._client = client

    def _blob(self) -> Any:
        if self._client is None:
            self._client = gcs_client()
        return self._client.bucket(self._bucket_name).blob(self._name)

    def create(self, text: str) -> bool:
        from google.api_core import exceptions

        try:
            self._blob().upload_from_string(text, content_type="application/json",
                                            if_generation_match=0)
        except exceptions.PreconditionFailed:
            return False
        return True

    def read(self) -> Stored | None:
        from google.api_core import exceptions

        if self._client is None:
            self._client = gcs_client()
        bucket = self._client.bucket(self._bucket_name)
        for _ in range(3):  # the metadata, then the data of that very generation
            blob = bucket.get_blob(self._name)
            if blob is None:
                return None
            try:
                data = blob.download_as_bytes(if_generation_match=blob.generation)
            except (exceptions.NotFound, exceptions.PreconditionFailed):
                continue  # changed between the two requests: look again
            updated = blob.updated.timestamp() if blob.updated is not None else 0.0
            return Stored(data.decode(), blob.generation, updated)
        return None

    def replace(self, text: str, version: Any) -> bool:
        from google.api_core import exceptions

        try:
            self._blob().upload_from_string(text, content_type="application/json",
                                            if_generation_match=version)
        except (exceptions.PreconditionFailed, exceptions.NotFound):
            return False
        return True

    def delete(self, version: Any) -> bool:
        from google.api_core import exceptions

        try:
            self._blob().delete(if_generation_match=version)
        except (exceptions.PreconditionFailed, exceptions.NotFound):
            return False
        return True


def gcs_client() -> Any:
    """A `google.cloud.storage.Client`, or a ConfigError naming the fix."""
    try:
        from google.cloud import storage
    except ImportError as err:
        raise ConfigError(
            "an evaluator lease on gs:// needs the google-cloud-storage client, the only "
            "way to create an object exclusively (TensorFlow's gs:// file system cannot): "
            "pip install \"trainexec[gcs]\"") from err
    project = os.environ.get("GOOGLE_CLOUD_PROJECT") or os.environ.get("GCLOUD_PROJECT")
    try:
        return storage.Client(project=project)
    except Exception as err:  # google.auth's DefaultCredentialsError, an unset project
        if project is None and "project" in str(err).lower():
            return storage.Client(project="trainexec-lease")  # objects need no project
        raise ConfigError(
            f"cannot reach Google Cloud Storage for the evaluator lease: {err}. Give the "
            "task credentials (a service account, GOOGLE_APPLICATION_CREDENTIALS, or the "
            "workload identity of its pod)") from err


class _TensorFlowStore:
    """Another TensorFlow file system: best effort, not exclusive."""

    _warned: set[str] = set()

    def __init__(self, path: str) -> None:
        self.path = path
        scheme = path.split("://", 1)[0]
        if scheme not in self._warned:
            self._warned.add(scheme)
            logger.warning(
                "The evaluator lease on %s:// is not exclusive: TensorFlow's file system "
                "cannot create a file only if it is absent there, so two evaluators started "
                "within a moment of each other may both run. Use a local or NFS path, or "
                "gs://, for model_dir (or the evaluator's state directory)", scheme)

    def create(self, text: str) -> bool:
        import tensorflow as tf

        tmp = _temporary_beside(self.path)
        with tf.io.gfile.GFile(tmp, "w") as f:
            f.write(text)
        try:
            tf.io.gfile.rename(tmp, self.path, overwrite=False)
        except tf.errors.AlreadyExistsError:
            return False
        finally:
            if tf.io.gfile.exists(tmp):
                tf.io.gfile.remove(tmp)
        found = self.read()
        return found is not None and found.text == text

    def read(self) -> Stored | None:
        import tensorflow as tf

        from trainexec.records.layout import read_whole

        try:
            text = read_whole(self.path).decode("utf-8")
            mtime = tf.io.gfile.stat(self.path).mtime_nsec
        except tf.errors.NotFoundError:
            return None
        return Stored(text, (len(text), mtime), mtime / 1e9)

    def replace(self, text: str, version: Any) -> bool:
        found = self.read()
        if found is None or found.version != version:
            return False
        from trainexec.records.layout import atomic_write_text

        atomic_write_text(self.path, text)
        return True

    def delete(self, version: Any) -> bool:
        import tensorflow as tf

        found = self.read()
        if found is None or found.version != version:
            return False
        try:
            tf.io.gfile.remove(self.path)
        except tf.errors.NotFoundError:
            return False
        return True


def _temporary_beside(path: str) -> str:
    """A new temporary name beside `path` that does not start with its name: a file
    system that matches names by prefix (TensorFlow's ram://) would take a temporary
    file named after the lease for the lease itself."""
    return os.path.join(os.path.dirname(path),
                        f".tmp-{uuid.uuid4().hex}-{os.path.basename(path)}")
