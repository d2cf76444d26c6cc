"""The emulator process, ``python -m trainexec.testing.gcs --address A --port P ...``:
PyPI's `gcp-storage-emulator` (its storage and request handlers) behind a dispatcher of
its own that adds TLS, HTTP/1.1, preconditions, fresh generations and GCS's times (the
package docstring lists what and why).

`_Dispatcher` holds the bucket and answers one request at a time (one lock), with one
method per kind of request: the storage layout, a route the emulator does not have, a
write of a new object version, a request on one object, and the rest; `_Handler` reads
the HTTP request and hands it over; `_serve` puts them behind TLS and says when ready.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import http.server
import io
import json
import logging
import os
import re
import signal
import socket
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
from http import HTTPStatus
from typing import Any, Sequence

from trainexec.testing.gcs.faults import FaultFile, play
from trainexec.testing.gcs.preconditions import (conditions_fail, error_body,
                                                 query_conditions, rfc3339)
from trainexec.testing.gcs.tls import HOST_NAMES

__all__ = ["READY", "main", "object_path"]

READY = b"ready"  # the line the process prints once it answers over TLS


def object_path(bucket: str, name: str) -> str:
    """Where the emulator keeps object `name`'s content, under its data directory's
    `.cloudstorage/`: a hash of the name, so that `a/` and `a/b` can coexist."""
    return f"{bucket}/{hashlib.sha256(name.encode('utf-8')).hexdigest()}"


log = logging.getLogger("trainexec.testing.gcs")


def _storage(args) -> Any:
    """The emulator's storage under `args.data`, holding the bucket `args.bucket`."""
    from gcp_storage_emulator.handlers import buckets as emu_buckets
    from gcp_storage_emulator.storage import Storage

    class HashedStorage(Storage):
        """Object contents under a hash of the name: `a/` and `a/b` can coexist."""

        def _object_path(self, bucket_name, file_name):
            return object_path(bucket_name, file_name)

    storage = HashedStorage(use_memory_fs=False, data_dir=args.data)
    bucket = emu_buckets.create_bucket(args.bucket, storage) or storage.get_bucket(args.bucket)
    bucket["softDeletePolicy"] = {"retentionDurationSeconds": "0"}  # deletes are final
    storage._write_config_to_file()
    return storage


def _message_types(emu, args) -> tuple[type, type]:
    """The emulator's Request and Response classes, as this dispatcher needs them."""

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

    return Request, Response


class _Dispatcher:
    """One bucket's requests, one at a time: the emulator's handlers, with GCS's
    preconditions, fresh generations and times around them."""

    def __init__(self, args, storage: Any) -> None:
        from gcp_storage_emulator import server as emu
        from gcp_storage_emulator.handlers import objects as emu_objects

        self.args = args
        self.storage = storage
        self.routes = emu.HANDLERS
        self.objects = emu_objects
        self.Request, self.Response = _message_types(emu, args)
        self.lock = threading.Lock()
        self.last_generation = 0
        self.upload_conditions: dict[str, dict[str, str]] = {}  # upload id -> conditions
        self.faults = FaultFile(args.faults)  # what GcsEmulator.inject asks for

    # --- one request
    def dispatch(self, handler_self, method: str, body: bytes):
        """The response to one HTTP request (its `body` already read)."""
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
        request = self.Request(shim, method)
        response = self.Response(handler_self)
        path = request.path
        with self.lock:
            layout = re.fullmatch(r"/storage/v1/b/([-.\w]+)/storageLayout", path)
            if layout and method == "GET":
                return self.storage_layout(response, layout.group(1))
            match, handler = self.find_route(path, method)
            if handler is None:
                return self.not_implemented(response, method, path)
            request.set_match(match)
            params = request.params or {}
            conditions = query_conditions(request.query)
            target = self.write_target(request, handler, match)
            if "upload_id" in request.query:
                conditions = {**self.upload_conditions.get(request.query["upload_id"][0], {}),
                              **conditions}
            if target is not None:
                return self.write_object(request, response, handler, target, conditions)
            if "object_id" in params:
                return self.object_request(request, response, handler, method, conditions)
            return self.other_request(request, response, handler, conditions)

    def failed(self, handler_self):
        """A 500 for a request whose dispatch raised."""
        response = self.Response(handler_self)
        response.status = HTTPStatus.INTERNAL_SERVER_ERROR
        response.json(error_body(500, "backendError", "emulator error (see its log)"))
        return response

    # --- the kinds of request
    def storage_layout(self, response, name: str):
        """``GET .../b/<bucket>/storageLayout``: a flat bucket."""
        if self.storage.get_bucket(name) is None:
            response.status = HTTPStatus.NOT_FOUND
            response.json(error_body(404, "notFound", f"bucket {name} not found"))
        else:
            # No "hierarchicalNamespace": a flat bucket, renamed per object.
            response.json({"kind": "storage#storageLayout", "bucket": name,
                           "location": "US", "locationType": "multi-region"})
        return response

    def not_implemented(self, response, method: str, path: str):
        """A route the emulator has no handler for: 501."""
        response.status = HTTPStatus.NOT_IMPLEMENTED
        response.json(error_body(501, "notImplemented", f"{method} {path}"))
        return response

    def write_object(self, request, response, handler, target, conditions):
        """A request that writes a new version of `target` (bucket, object): its
        preconditions (and a copy's `ifSource...` ones) checked, then the emulator's
        handler, then a fresh generation and GCS's times on what it wrote. An upload that
        holds no byte is answered 308 with no Range, as by GCS (TensorFlow's client would
        resend from byte 1 after the emulator's "bytes=0-0", and get a 400)."""
        params = request.params or {}
        upload = request.query.get("upload_id", [None])[0]
        failed = conditions_fail(conditions, self.current(*target))
        if failed is None and handler in (self.objects.copy, self.objects.rewrite):
            source = (params.get("bucket_name"), params.get("object_id"))
            failed = conditions_fail(conditions, self.current(*source), "ifSource")
        if failed:
            self.precondition_failed(response, failed)
            self.upload_conditions.pop(upload, None)
            return response
        previous = self.current(*target)
        handler(request, response, self.storage)
        if upload and response.status.value == 308 and \
                self.storage.get_resumable_byte_count(upload) == 0:
            response._headers.pop("Range", None)  # as GCS; "bytes=0-0" would say one byte
        new = self.current(*target)
        if new is not None and new is not previous:
            self.stamp(new, int(previous["generation"]) if previous else 0)
            self.storage._write_config_to_file()
            self.upload_conditions.pop(upload, None)
        return self.finish(response, conditions)

    def object_request(self, request, response, handler, method: str, conditions):
        """A request on one object that writes no new version (a read, a patch, a
        delete): only its live generation exists; its preconditions (304 for a GET's
        ...NotMatch, else 412); then as `other_request`."""
        params = request.params or {}
        before = self.current(params.get("bucket_name"), params["object_id"])
        wanted = (request.query.get("generation") or [None])[0]
        if before and wanted and int(wanted) != int(before["generation"]):
            # One live version per object: any other generation is gone.
            response.status = HTTPStatus.NOT_FOUND
            response.json(error_body(404, "notFound",
                                     f"No such object: {params['object_id']}#{wanted}"))
            return response
        failed = conditions_fail(conditions, before) if before else None
        if failed:
            not_modified = method == "GET" and failed.endswith("NotMatch")
            if not_modified:  # no body
                response.status = HTTPStatus.NOT_MODIFIED
                return response
            self.precondition_failed(response, failed)
            return response
        return self.other_request(request, response, handler, conditions)

    def other_request(self, request, response, handler, conditions):
        """The emulator's handler as it is (buckets, listings, a resumable upload's
        start, an object's read); a patched object gets a new `updated` time."""
        handler(request, response, self.storage)
        if handler is self.objects.patch and response.obj is not None:
            response.obj["updated"] = rfc3339(time.time_ns())
            self.storage._write_config_to_file()
        return self.finish(response, conditions)

    # --- helpers
    def finish(self, response, conditions):
        """A resumable upload keeps the preconditions it started with (for its last
        chunk); an error without a body gets GCS's."""
        location = response._headers.get("Location")
        if location and "upload_id=" in location:
            upload_id = urllib.parse.parse_qs(urllib.parse.urlparse(location).query
                                              )["upload_id"][0]
            if conditions:
                self.upload_conditions[upload_id] = conditions
        if response.obj is None and not response._content and \
                response.status.value >= 400:
            response.json(error_body(response.status.value, "error", response.status.phrase))
        return response

    def precondition_failed(self, response, failed: str) -> None:
        response.status = HTTPStatus.PRECONDITION_FAILED
        response.json(error_body(412, "conditionNotMet",
                                 f"At least one of the pre-conditions you specified "
                                 f"did not hold ({failed})."))

    def find_route(self, path: str, method: str):
        for regex, handlers in self.routes:
            match = re.fullmatch(regex, path)
            if match:
                handler = handlers.get(method)
                if handler is None and method == "POST" and path.endswith("/o"):
                    handler = self.objects.insert  # upload POSTed without /upload
                return match, handler
        return None, None

    def current(self, bucket_name, name):
        return self.storage.objects.get(bucket_name, {}).get(name) if name else None

    def stamp(self, obj, previous_generation: int) -> None:
        """A new object version: fresh generation, times from this clock."""
        now = time.time_ns()
        generation = max(now // 1000, previous_generation + 1, self.last_generation + 1)
        self.last_generation = generation
        when = rfc3339(now)
        bucket_name, name = obj["bucket"], obj["name"]
        quoted = urllib.parse.quote(name, safe="")
        port = "" if self.args.port == 443 else f":{self.args.port}"
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

    def write_target(self, request, handler, match):
        """(bucket, object) that the request writes a new version of, if any."""
        objects = self.objects
        params = {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()
                  if v is not None}
        query = request.query
        if handler in (objects.insert, objects.upload_partial):
            if "upload_id" in query:
                session = self.storage.resumable.get(query["upload_id"][0])
                return (session["bucket"], session["name"]) if session else None
            kind = (query.get("uploadType") or [""])[0]
            if kind == "resumable":
                return None  # a session starts; the write comes with its last chunk
            name = (query.get("name") or [None])[0]
            if name is None and kind == "multipart" and isinstance(request.data, dict):
                name = request.data.get("meta", {}).get("name")
            return (params.get("bucket_name"), name) if name else None
        if handler in (objects.copy, objects.rewrite):
            return params["dest_bucket_name"], params["dest_object_id"]
        if handler in (objects.compose, objects.xml_upload):
            return params["bucket_name"], params["object_id"]
        return None


class _Handler(http.server.BaseHTTPRequestHandler):
    """Reads one HTTP request whole and sends what the server's `_Dispatcher` answers."""

    server: _Server  # the emulator's, whose dispatcher answers (`_serve`)
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes
    timeout = 120

    def read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts: list[bytes] = []
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
        dispatcher = self.server.dispatcher
        body = self.read_body()
        if play(self, dispatcher.faults):  # an injected error or reset instead
            return
        try:
            response = dispatcher.dispatch(self, method, body)
        except Exception:  # noqa: BLE001 - the client gets a 500, the log the trace
            log.error("%s %s failed:\n%s", method, self.path, traceback.format_exc())
            response = dispatcher.failed(self)
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
        if self.server.dispatcher.args.verbose:
            sys.stderr.write(f"{time.time():.3f} {format % fargs}\n")


class _Server(http.server.ThreadingHTTPServer):
    """The emulator's HTTP server on `address`: `dispatcher` answers each request."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], dispatcher: _Dispatcher) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.dispatcher = dispatcher
        super().__init__(address, _Handler)


def _serve(args) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    dispatcher = _Dispatcher(args, _storage(args))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    httpd = _Server((args.address, args.port), dispatcher)
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
    sys.stdout.buffer.write(READY + b"\n")
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
    parser.add_argument("--faults", help="a fault plan file (testing.gcs.faults), read "
                        "again when it changes")
    return _serve(parser.parse_args(argv))
