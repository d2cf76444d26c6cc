"""A Google Cloud Storage emulator that TensorFlow's own `gs://` file system talks to.

TensorFlow's GCS file system has no endpoint setting: it always asks
`https://www.googleapis.com/storage/v1/...` (metadata, listing, uploads) and
`https://storage.googleapis.com/<bucket>/<object>` (reads). So `GcsEmulator`
serves TLS on port 443 with a certificate for those two names, signed by a CA
made for the test, and a client process reaches it when

* its `/etc/hosts` maps `HOST_NAMES` to the emulator's address (`hosts_lines()`;
  a `trainexec.testing.netns.TestBed` does it with
  ``aliases={"gcs": GcsEmulator.HOST_NAMES}``, a bare network namespace with
  `/etc/netns/<ns>/hosts`), and
* its environment has `client_env()`: the CA bundle for TensorFlow's curl
  (`CURL_CA_BUNDLE`) and for Python's requests (`REQUESTS_CA_BUNDLE`), a fixed
  token (`GOOGLE_AUTH_TOKEN_FOR_TESTING`; no metadata server is asked,
  `NO_GCE_CHECK`) and `STORAGE_EMULATOR_HOST`, with which the
  google-cloud-storage client uses that endpoint with anonymous credentials.

The server is PyPI's `gcp-storage-emulator` (its storage and request handlers),
run by this module (``python -m trainexec.testing.gcs``) behind a dispatcher of
its own that adds what TensorFlow and a lease under generation preconditions
need:

* TLS, HTTP/1.1 (keep-alive, ``Expect: 100-continue``), https `Location` and
  `mediaLink` URLs, request bodies read whole (Content-Length or chunked) and
  empty bodies taken as empty objects (TensorFlow's directory markers);
* ``GET .../b/<bucket>/storageLayout`` answered as a flat bucket (no
  hierarchical namespace), so TensorFlow 2.21 renames a directory object by
  object as on most real buckets;
* the preconditions `ifGenerationMatch` (0: the object must not exist),
  `ifGenerationNotMatch`, `ifMetagenerationMatch`, `ifMetagenerationNotMatch`
  and their `ifSource...` forms on copies, checked atomically with the write
  (one lock over every request): 412 conditionNotMet (304 for a GET's
  ...NotMatch), as GCS answers;
* every new object version gets a fresh generation (increasing, never reused),
  metageneration 1 and `timeCreated`/`updated` from the emulator's clock at the
  moment it is written (a resumable upload: when it completes), in GCS's
  millisecond form; TensorFlow's `stat().mtime_nsec` is that `updated`;
* object contents stored under a hash of the name, so `a/` (a directory
  marker) and `a/b` coexist; deletes are final (no soft delete).

Example:
    ```python
    with GcsEmulator(str(tmp_path), run=lambda argv, **kw: bed.popen("gcs", argv, **kw),
                     address=bed.host("gcs").address) as gcs:
        env = {**os.environ, **gcs.client_env()}
        bed.popen("demo-chief-0", [sys.executable, "train.py", "--model_dir",
                                   gcs.url("model")], env=env)
    ```

`root` must be a directory the emulator's host sees at the same path (it
holds the certificates, the data and `emulator.log`); `stop()` removes what
was made there. Needs root for port 443 (`unavailable()` says why not).

Modules:

* `emulator`: `GcsEmulator`, the process started, waited for and stopped, and what a
  client needs (`client_env()`, `hosts_lines()`, `read_object()`); `unavailable()`;
* `tls`: `HOST_NAMES` and `make_certificates`, the CA made for the test;
* `server`: the emulator process (``python -m trainexec.testing.gcs``, `__main__`): the
  dispatcher over `gcp-storage-emulator`'s handlers;
* `preconditions`: GCS's preconditions, times and error bodies (pure);
* `faults`: what the emulator does to chosen requests for a while when asked
  (`GcsEmulator.inject`: an HTTP error, a reset connection, a delay); `GcsEmulator.pause()`
  and `resume()` make an outage.
"""

from __future__ import annotations

from trainexec.testing.gcs.emulator import GcsEmulator, unavailable
from trainexec.testing.gcs.tls import HOST_NAMES, make_certificates

__all__ = ["HOST_NAMES", "GcsEmulator", "make_certificates", "unavailable"]
