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
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import hashlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Sequence

__all__ = ["HOST_NAMES", "GcsEmulator", "make_certificates", "unavailable"]

HOST_NAMES = ("www.googleapis.com", "storage.googleapis.com")
_TOKEN = "trainexec-test-token"
_READY = b"ready"


def unavailable(port: int = 443) -> str | None:
    """Why a `GcsEmulator` cannot run here (None when it can): a missing package,
    or not root for a port below 1024."""
    for module, package in (("gcp_storage_emulator", "gcp-storage-emulator"),
                            ("cryptography", "cryptography")):
        if importlib.util.find_spec(module) is None:
            return (f"the GCS emulator needs the Python package {package!r} "
                    f"(pip install {package})")
    if port < 1024 and os.geteuid() != 0:
        return f"the GCS emulator serves port {port} (as TensorFlow needs): root only"
    return None


def make_certificates(directory: str, names: Sequence[str] = HOST_NAMES,
                      days: int = 30) -> tuple[str, str, str]:
    """Writes a CA made for the test and a server certificate for `names` signed
    by it, in PEM files under `directory`: (ca.pem, server.pem, server-key.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=days)

    def subject(common_name: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "trainexec tests"),
                          x509.NameAttribute(NameOID.COMMON_NAME, common_name)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = subject("trainexec test CA")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (x509.CertificateBuilder()
          .subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(
              digital_signature=True, content_commitment=False, key_encipherment=False,
              data_encipherment=False, key_agreement=False, key_cert_sign=True,
              crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(ca_ski, critical=False)
          .sign(ca_key, hashes.SHA256()))

    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(subject(names[0])).issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
                ca_ski), critical=False)
            .sign(ca_key, hashes.SHA256()))

    paths = tuple(os.path.join(directory, n) for n in ("ca.pem", "server.pem",
                                                        "server-key.pem"))
    pem = serialization.Encoding.PEM
    with open(paths[0], "wb") as f:
        f.write(ca.public_bytes(pem))
    with open(paths[1], "wb") as f:
        f.write(cert.public_bytes(pem))
    fd = os.open(paths[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return paths  # type: ignore[return-value]


def _popen_here(argv: Sequence[str], **kwargs) -> subprocess.Popen:
    kwargs.setdefault("start_new_session", True)
    return subprocess.Popen(list(argv), **kwargs)


class GcsEmulator:
    """One emulator process serving one bucket over TLS (see the module doc).

    `run(argv, **popen_kwargs)` starts the process where it should live (e.g. on
    a test bed's host: ``lambda argv, **kw: bed.popen("gcs", argv, **kw)``); the
    default starts it here. `address` is where it listens and what
    `hosts_lines()` names; `port` must stay 443 for TensorFlow.
    """

    HOST_NAMES = HOST_NAMES

    def __init__(self, root: str, *, bucket: str = "trainexec-test",
                 run: Callable[..., subprocess.Popen] | None = None,
                 address: str = "127.0.0.1", port: int = 443,
                 start_timeout: float = 30.0) -> None:
        self.root = os.fspath(root)
        self.bucket = bucket
        self.address = address
        self.port = port
        self._run = run or _popen_here
        self._start_timeout = start_timeout
        self._dir: str | None = None
        self._proc: subprocess.Popen | None = None
        self.ca_path = ""
        self.log_path = ""

    # -- what a client needs ------------------------------------------------------------
    def client_env(self) -> dict[str, str]:
        """Environment variables a client process needs (add them to its env)."""
        if not self.ca_path:
            raise RuntimeError("the GCS emulator is not started: use it inside `with`")
        endpoint = "https://storage.googleapis.com"
        if self.port != 443:
            endpoint += f":{self.port}"
        return {
            "CURL_CA_BUNDLE": self.ca_path,        # TensorFlow's curl
            "REQUESTS_CA_BUNDLE": self.ca_path,    # requests (google-cloud-storage)
            "GOOGLE_AUTH_TOKEN_FOR_TESTING": _TOKEN,  # TensorFlow: this bearer token
            "NO_GCE_CHECK": "true",                # no metadata server to ask
            "STORAGE_EMULATOR_HOST": endpoint,     # google-cloud-storage: anonymous
        }

    def hosts_lines(self) -> str:
        """The `/etc/hosts` line a client host needs."""
        return f"{self.address} {' '.join(self.HOST_NAMES)}\n"

    def url(self, path: str = "") -> str:
        """`gs://<bucket>/<path>`."""
        return f"gs://{self.bucket}/{path.lstrip('/')}"

    def read_object(self, name: str) -> bytes | None:
        """The live content of object `name` as the emulator stores it (None: none), read
        from its files: for a test that is not on a bed host, where `gs://` resolves."""
        if self._dir is None:
            raise RuntimeError("the GCS emulator is not started: use it inside `with`")
        digest = hashlib.sha256(name.lstrip("/").encode("utf-8")).hexdigest()
        try:
            # The emulator keeps objects under <data>/.cloudstorage/<bucket>/<hash>.
            with open(os.path.join(self._dir, "data", ".cloudstorage", self.bucket, digest),
                      "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    # -- running ------------------------------------------------------------------------
    def __enter__(self) -> "GcsEmulator":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> None:
        """Makes the certificates, starts the emulator and waits until it answers."""
        if self._proc is not None:
            raise RuntimeError("the GCS emulator is already running")
        reason = unavailable(self.port)
        if reason:
            raise RuntimeError(reason)
        os.makedirs(self.root, exist_ok=True)
        self._dir = tempfile.mkdtemp(prefix="gcs-", dir=self.root)
        os.chmod(self._dir, 0o755)
        try:
            self.ca_path, cert, key = make_certificates(self._dir)
            data = os.path.join(self._dir, "data")
            os.makedirs(data)
            self.log_path = os.path.join(self._dir, "emulator.log")
            argv = [sys.executable, "-m", __name__, "--address", self.address,
                    "--port", str(self.port), "--bucket", self.bucket, "--data", data,
                    "--cert", cert, "--key", key, "--ca", self.ca_path] + (["--verbose"] if os.environ.get("TRAINEXEC_GCS_VERBOSE") else [])
            # trainexec importable there too, installed or not.
            package_parent = os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.abspath(__file__))))
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (package_parent, env.get("PYTHONPATH")) if p)
            with open(self.log_path, "ab") as log:
                self._proc = self._run(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=log, cwd=self._dir, env=env)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        deadline = time.monotonic() + self._start_timeout
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._proc.stdout], [], [], 0.2)
            if ready:
                line = self._proc.stdout.readline()
                break
            if self._proc.poll() is not None:
                break
        if line.strip() != _READY:
            raise RuntimeError(f"the GCS emulator did not start (exit {self._proc.poll()}); "
                               f"its log:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        """The end of the emulator's log."""
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        """Ends the emulator (closing its stdin, then SIGTERM, then SIGKILL, by its
        pid or process group) and removes its files (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin:
                    proc.stdin.close()  # it ends when its stdin does
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    self._signal(proc, sig)
                    try:
                        proc.wait(timeout=5)
                        break
                    except subprocess.TimeoutExpired:
                        continue
            with contextlib.suppress(OSError):
                if proc.stdout:
                    proc.stdout.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    @staticmethod
    def _signal(proc: subprocess.Popen, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(proc.pid) == proc.pid:  # a group of its own (a bed's waiter)
                os.killpg(proc.pid, sig)
            else:
                os.kill(proc.pid, sig)


# ---------------------------------------------------------------------------------------
# The emulator process: python -m trainexec.testing.gcs --address A --port P ...
# ---------------------------------------------------------------------------------------

_CONDITIONS = ("ifGenerationMatch", "ifGenerationNotMatch", "ifMetagenerationMatch",
               "ifMetagenerationNotMatch")


def _rfc3339(ns: int) -> str:
    """GCS's form of a time: UTC, milliseconds."""
    dt = datetime.datetime.fromtimestamp(ns // 1_000_000_000, datetime.timezone.utc)
    return f"{dt:%Y-%m-%dT%H:%M:%S}.{ns // 1_000_000 % 1000:03d}Z"


def _error(status: int, reason: str, message: str) -> dict:
    return {"error": {"code": status, "message": message,
                      "errors": [{"domain": "global", "reason": reason, "message": message}]}}


def _serve(args) -> int:  # noqa: C901 - one closure over the emulator's modules
    import hashlib
    import http.client
    import http.server
    import io
    import json
    import logging
    import re
    import socket
    import ssl
    import threading
    import traceback
    import urllib.parse
    from http import HTTPStatus

    from gcp_storage_emulator import server as emu
    from gcp_storage_emulator.handlers import buckets as emu_buckets
    from gcp_storage_emulator.handlers import objects as emu_objects
    from gcp_storage_emulator.storage import Storage

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    log = logging.getLogger("trainexec.testing.gcs")

    class HashedStorage(Storage):
        """Object contents under a hash of the name: `a/` and `a/b` can coexist."""

        def _object_path(self, bucket_name, file_name):
            digest = hashlib.sha256(file_name.encode("utf-8")).hexdigest()
            return f"{bucket_name}/{digest}"

    storage = HashedStorage(use_memory_fs=False, data_dir=args.data)
    bucket = emu_buckets.create_bucket(args.bucket, storage) or storage.get_bucket(args.bucket)
    bucket["softDeletePolicy"] = {"retentionDurationSeconds": "0"}  # deletes are final
    storage._write_config_to_file()

    lock = threading.Lock()
    clock = {"generation": 0}
    upload_conditions: dict[str, dict[str, str]] = {}  # resumable upload id -> conditions

    class Request(emu.Request):
        """The emulator's request, with https URLs and the body already read."""

        def __init__(self, shim, method):
            super().__init__(shim, method)
            host = shim.headers.get("Host") or f"{args.address}:{args.port}"
            self._base_url = f"https://{host}"
            self._full_url = self._base_url + self._path
            self._parsed_url = urllib.parse.urlparse(self._full_url)
            self._query = urllib.parse.parse_qs(self._parsed_url.query)

        @property
        def data(self):
            value = emu.Request.data.fget(self)
            return b"" if value is None else value

    class Response(emu.Response):
        """The emulator's response; a JSON body is serialized when sent, so that
        a fresh generation stamped after the handler shows in it."""

        def __init__(self, handler):
            super().__init__(handler)
            self.obj = None

        def json(self, obj):
            self["Content-type"] = "application/json"
            self.obj = obj

        def write(self, content):
            self._content += content

        def close(self):
            if self.obj is not None:
                self._content = json.dumps(self.obj)
            super().close()

    def find_route(path: str, method: str):
        for regex, handlers in emu.HANDLERS:
            match = re.fullmatch(regex, path)
            if match:
                handler = handlers.get(method)
                if handler is None and method == "POST" and path.endswith("/o"):
                    handler = emu_objects.insert  # upload POSTed without /upload
                return match, handler
        return None, None

    def current(bucket_name, name):
        return storage.objects.get(bucket_name, {}).get(name) if name else None

    def conditions_fail(conditions: dict[str, str], obj, prefix: str = "") -> str | None:
        """The first precondition that `obj` (None: no such object) fails."""
        generation = int(obj["generation"]) if obj else None
        metageneration = int(obj["metageneration"]) if obj else None
        for name in _CONDITIONS:
            raw = conditions.get(prefix + name[2:] if prefix else name)
            if raw is None:
                continue
            value = int(raw)
            if name == "ifGenerationMatch":
                ok = generation is None if value == 0 else generation == value
            elif name == "ifGenerationNotMatch":
                ok = generation is not None if value == 0 else generation != value
            elif name == "ifMetagenerationMatch":
                ok = metageneration == value
            else:
                ok = metageneration != value
            if not ok:
                return (prefix + name[2:]) if prefix else name
        return None

    def query_conditions(query) -> dict[str, str]:
        return {k: v[0] for k, v in query.items()
                if k.startswith("if") and k[2:].startswith(("Generation", "Metageneration",
                                                            "SourceGeneration",
                                                            "SourceMetageneration"))}

    def stamp(obj, previous_generation: int) -> None:
        """A new object version: fresh generation, times from this clock."""
        now = time.time_ns()
        generation = max(now // 1000, previous_generation + 1, clock["generation"] + 1)
        clock["generation"] = generation
        when = _rfc3339(now)
        bucket_name, name = obj["bucket"], obj["name"]
        quoted = urllib.parse.quote(name, safe="")
        port = "" if args.port == 443 else f":{args.port}"
        obj.update({
            "generation": str(generation), "metageneration": "1",
            "id": f"{bucket_name}/{name}/{generation}",
            "timeCreated": when, "updated": when, "timeStorageClassUpdated": when,
            "selfLink": (f"https://{HOST_NAMES[0]}{port}/storage/v1/b/{bucket_name}"
                         f"/o/{quoted}"),
            "mediaLink": (f"https://{HOST_NAMES[1]}{port}/download/storage/v1/b/"
                          f"{bucket_name}/o/{quoted}?generation={generation}&alt=media"),
        })
        obj["size"] = str(obj.get("size") or 0)

    def write_target(request, handler, match):
        """(bucket, object) that the request writes a new version of, if any."""
        params = {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()
                  if v is not None}
        query = request.query
        if handler in (emu_objects.insert, emu_objects.upload_partial):
            if "upload_id" in query:
                session = storage.resumable.get(query["upload_id"][0])
                return (session["bucket"], session["name"]) if session else None
            kind = (query.get("uploadType") or [""])[0]
            if kind == "resumable":
                return None  # a session starts; the write comes with its last chunk
            name = (query.get("name") or [None])[0]
            if name is None and kind == "multipart" and isinstance(request.data, dict):
                name = request.data.get("meta", {}).get("name")
            return (params.get("bucket_name"), name) if name else None
        if handler in (emu_objects.copy, emu_objects.rewrite):
            return params["dest_bucket_name"], params["dest_object_id"]
        if handler in (emu_objects.compose, emu_objects.xml_upload):
            return params["bucket_name"], params["object_id"]
        return None

    def dispatch(handler_self, method: str, body: bytes):
        headers = http.client.HTTPMessage()
        for key, value in handler_self.headers.items():
            if key.lower() not in ("content-length", "transfer-encoding"):
                headers[key] = value
        headers["Content-Length"] = str(len(body))
        shim = type("Shim", (), {})()
        shim.path, shim.server, shim.headers = handler_self.path, handler_self.server, headers
        shim.rfile = io.BytesIO(body)
        override = headers.get("x-http-method-override")
        method = override or method
        request = Request(shim, method)
        response = Response(handler_self)
        path = request.path
        with lock:
            layout = re.fullmatch(r"/storage/v1/b/([-.\w]+)/storageLayout", path)
            if layout and method == "GET":
                name = layout.group(1)
                if storage.get_bucket(name) is None:
                    response.status = HTTPStatus.NOT_FOUND
                    response.json(_error(404, "notFound", f"bucket {name} not found"))
                else:
                    # No "hierarchicalNamespace": a flat bucket, renamed per object.
                    response.json({"kind": "storage#storageLayout", "bucket": name,
                                   "location": "US", "locationType": "multi-region"})
                return response
            match, handler = find_route(path, method)
            if handler is None:
                response.status = HTTPStatus.NOT_IMPLEMENTED
                response.json(_error(501, "notImplemented", f"{method} {path}"))
                return response
            request.set_match(match)
            params = request.params or {}
            conditions = query_conditions(request.query)
            target = write_target(request, handler, match)
            if "upload_id" in request.query:
                conditions = {**upload_conditions.get(request.query["upload_id"][0], {}),
                              **conditions}
            if target is not None:
                before = current(*target)
                failed = conditions_fail(conditions, before)
                if failed is None:
                    source = (params.get("bucket_name"), params.get("object_id"))
                    if handler in (emu_objects.copy, emu_objects.rewrite):
                        failed = conditions_fail(conditions, current(*source), "ifSource")
                if failed:
                    response.status = HTTPStatus.PRECONDITION_FAILED
                    response.json(_error(412, "conditionNotMet",
                                         f"At least one of the pre-conditions you specified "
                                         f"did not hold ({failed})."))
                    if "upload_id" in request.query:
                        upload_conditions.pop(request.query["upload_id"][0], None)
                    return response
            elif "object_id" in params:
                before = current(params.get("bucket_name"), params["object_id"])
                wanted = (request.query.get("generation") or [None])[0]
                if before and wanted and int(wanted) != int(before["generation"]):
                    # One live version per object: any other generation is gone.
                    response.status = HTTPStatus.NOT_FOUND
                    response.json(_error(404, "notFound",
                                         f"No such object: {params['object_id']}#{wanted}"))
                    return response
                failed = conditions_fail(conditions, before) if before else None
                if failed:
                    not_modified = method == "GET" and failed.endswith("NotMatch")
                    if not_modified:  # no body
                        response.status = HTTPStatus.NOT_MODIFIED
                        return response
                    response.status = HTTPStatus.PRECONDITION_FAILED
                    response.json(_error(412, "conditionNotMet",
                                         f"At least one of the pre-conditions you specified "
                                         f"did not hold ({failed})."))
                    return response
            previous = current(*target) if target else None
            handler(request, response, storage)
            if target is not None:
                new = current(*target)
                if new is not None and new is not previous:
                    stamp(new, int(previous["generation"]) if previous else 0)
                    storage._write_config_to_file()
                    if "upload_id" in request.query:
                        upload_conditions.pop(request.query["upload_id"][0], None)
            elif handler is emu_objects.patch and response.obj is not None:
                response.obj["updated"] = _rfc3339(time.time_ns())
                storage._write_config_to_file()
            location = response._headers.get("Location")
            if location and "upload_id=" in location:
                upload_id = urllib.parse.parse_qs(urllib.parse.urlparse(location).query
                                                  )["upload_id"][0]
                if conditions:
                    upload_conditions[upload_id] = conditions
            if response.obj is None and not response._content and \
                    response.status.value >= 400:
                response.json(_error(response.status.value, "error", response.status.phrase))
        return response

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes
        timeout = 120

        def read_body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline().strip():  # trailers
                            pass
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def serve(self, method: str) -> None:
            body = self.read_body()
            try:
                response = dispatch(self, method, body)
            except Exception:  # noqa: BLE001 - the client gets a 500, the log the trace
                log.error("%s %s failed:\n%s", method, self.path, traceback.format_exc())
                response = Response(self)
                response.status = HTTPStatus.INTERNAL_SERVER_ERROR
                response.json(_error(500, "backendError", "emulator error (see its log)"))
            response.close()

        def do_GET(self):
            self.serve("GET")

        def do_POST(self):
            self.serve("POST")

        def do_PUT(self):
            self.serve("PUT")

        def do_DELETE(self):
            self.serve("DELETE")

        def do_PATCH(self):
            self.serve("PATCH")

        def log_message(self, format, *fargs):
            if args.verbose:
                sys.stderr.write(f"{time.time():.3f} {format % fargs}\n")

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in args.address else socket.AF_INET

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    httpd = Server((args.address, args.port), Handler)
    # The handshake happens in each connection's thread, not in the accepting one.
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True,
                                       do_handshake_on_connect=False)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()

    # Answer once over TLS, as a client would, before saying ready.
    client = ssl.create_default_context(cafile=args.ca)
    with socket.create_connection((args.address, args.port), timeout=10) as raw, \
            client.wrap_socket(raw, server_hostname=HOST_NAMES[0]) as tls:
        tls.sendall(f"GET /storage/v1/b/{args.bucket} HTTP/1.1\r\nHost: {HOST_NAMES[0]}\r\n"
                    f"Connection: close\r\n\r\n".encode())
        status_line = tls.makefile("rb").readline()
    if status_line.split()[1:2] != [b"200"]:
        log.error("self-check: GET bucket answered %r", status_line)
        return 1
    log.warning("serving gs://%s on https://%s:%s (%s)", args.bucket, args.address,
                args.port, ", ".join(HOST_NAMES))
    sys.stdout.buffer.write(_READY + b"\n")
    sys.stdout.flush()
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    # Ends when its stdin ends: the starting process closed it, or died.
    while os.read(0, 4096):
        pass
    httpd.shutdown()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m trainexec.testing.gcs",
        description="Serve one GCS bucket over TLS for TensorFlow's gs:// file system "
                    "and google-cloud-storage (ends when stdin ends).")
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=443)
    parser.add_argument("--bucket", default="trainexec-test")
    parser.add_argument("--data", required=True, help="directory for the objects")
    parser.add_argument("--cert", required=True, help="server certificate (PEM)")
    parser.add_argument("--key", required=True, help="its private key (PEM)")
    parser.add_argument("--ca", required=True, help="the CA that signed it (PEM)")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    return _serve(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
