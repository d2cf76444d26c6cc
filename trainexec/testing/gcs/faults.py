"""Faults the GCS emulator plays on chosen requests for a while: what a bucket does to
its clients when it misbehaves.

A `FaultPlan` says, until a wall-clock time, which kinds of request (`REQUEST_KINDS`:
reads, uploads, listings, metadata, deletes, and the lease's conditional writes) get
which treatment:

* `error`: an HTTP status (429, 500, 503, ...) with GCS's JSON error body, and nothing
  done;
* `reset`: the connection closed without an answer (what a load balancer dropping it
  does);
* `delay`: the request waits `delay_secs`, then is served.

`GcsEmulator.inject(plan)` writes the plan to the emulator's fault file; the emulator
reads it again whenever the file changes (`FaultFile`), so faults start and end while it
serves. An outage (the bucket gone silent, connections hanging) is the emulator's
process stopped and resumed (`GcsEmulator.pause()` / `resume()`), not a plan.

Example:
    ```python
    emulator.inject(FaultPlan("error", status=503, kinds=("upload",), secs=20))
    emulator.inject(FaultPlan("delay", delay_secs=3.0, secs=30))
    emulator.clear_faults()
    ```
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import socket
import struct
import time
import urllib.parse
from typing import Any, Mapping, Sequence

__all__ = ["MODES", "REQUEST_KINDS", "FaultFile", "FaultPlan", "play", "request_kind"]

MODES = ("error", "reset", "delay")
REQUEST_KINDS = ("read", "upload", "list", "metadata", "delete", "lease")
# Conditional writes carry one of these; the evaluator lease is the one writer using them.
_CONDITIONS = ("ifGenerationMatch", "ifGenerationNotMatch", "ifMetagenerationMatch",
               "ifMetagenerationNotMatch")


@dataclasses.dataclass(frozen=True)
class FaultPlan:
    """Until `until` (wall-clock seconds; `secs` from now when made with `secs`), each
    request of `kinds` gets `mode` (see the module doc)."""

    mode: str
    kinds: Sequence[str] = REQUEST_KINDS
    status: int = 503
    delay_secs: float = 0.0
    until: float = 0.0
    secs: dataclasses.InitVar[float | None] = None

    def __post_init__(self, secs: float | None) -> None:
        if self.mode not in MODES:
            raise ValueError(f"fault mode {self.mode!r}: use one of {', '.join(MODES)}")
        unknown = [k for k in self.kinds if k not in REQUEST_KINDS]
        if unknown or not self.kinds:
            raise ValueError(f"request kinds {list(self.kinds)}: use some of "
                             f"{', '.join(REQUEST_KINDS)}")
        if self.mode == "error" and not 400 <= self.status <= 599:
            raise ValueError(f"status {self.status}: an error is a 4xx or 5xx")
        if self.mode == "delay" and self.delay_secs <= 0:
            raise ValueError("a delay needs delay_secs > 0")
        object.__setattr__(self, "kinds", tuple(self.kinds))
        if secs is not None:
            if secs <= 0:
                raise ValueError(f"secs {secs}: a fault lasts a while, give secs > 0")
            object.__setattr__(self, "until", time.time() + secs)

    def applies(self, kind: str, now: float) -> bool:
        return now < self.until and kind in self.kinds

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "kinds": list(self.kinds), "status": self.status,
                "delay_secs": self.delay_secs, "until": self.until}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "FaultPlan":
        return cls(mode=data["mode"], kinds=tuple(data["kinds"]), status=int(data["status"]),
                   delay_secs=float(data["delay_secs"]), until=float(data["until"]))


def request_kind(method: str, path: str, query: Mapping[str, Sequence[str]]) -> str:
    """Which kind (`REQUEST_KINDS`) a request of TensorFlow's or google-cloud-storage's
    client is, by its method, path and query."""
    if any(condition in query for condition in _CONDITIONS) and method != "GET":
        return "lease"
    if method == "DELETE":
        return "delete"
    if method in ("POST", "PUT") or path.startswith("/upload/"):
        return "upload"  # inserts, resumable chunks, copies, rewrites, composes
    if method == "PATCH":
        return "metadata"
    if "alt" in query and query["alt"][:1] == ["media"] or path.startswith("/download/"):
        return "read"
    if re.fullmatch(r"/storage/v1/b/[^/]+/o/?", path):
        return "list"
    if path.startswith("/storage/v1/"):
        return "metadata"
    return "read"  # storage.googleapis.com/<bucket>/<object>: a media read


class FaultFile:
    """The emulator's side of the fault file: the plan it holds, read again when the
    file changes (one `stat` per request)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._seen: tuple[int, int] | None = None
        self._plan: FaultPlan | None = None

    def plan(self) -> FaultPlan | None:
        if not self.path:
            return None
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._plan = None, None
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        if key != self._seen:
            try:
                with open(self.path) as f:
                    data = json.load(f)
                self._plan = FaultPlan.from_json(data) if data else None
                self._seen = key
            except (OSError, ValueError, KeyError):
                return self._plan  # caught mid-replace: the last plan holds
        return self._plan

    @staticmethod
    def write(path: str, plan: FaultPlan | None) -> None:
        """Replaces the plan (None: no fault) atomically."""
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(plan.to_json() if plan is not None else {}, f)
        os.replace(tmp, path)


def play(handler: Any, faults: FaultFile) -> bool:
    """Plays the plan on one request an `http.server` handler is answering: True when
    the request got a fault instead of an answer (an error, a reset), False when it is
    to be served (at once, or after its delay)."""
    plan = faults.plan()
    if plan is None:
        return False
    url = urllib.parse.urlsplit(handler.path)
    kind = request_kind(handler.command, url.path, urllib.parse.parse_qs(url.query))
    if not plan.applies(kind, time.time()):
        return False
    if plan.mode == "delay":
        time.sleep(plan.delay_secs)
        return False
    if plan.mode == "reset":  # RST, no answer: SO_LINGER on with a zero timeout
        with contextlib.suppress(OSError):
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                          struct.pack("ii", 1, 0))
            handler.connection.close()
        handler.close_connection = True
        return True
    body = json.dumps({"error": {"code": plan.status, "message": f"injected {plan.status} "
                                 f"on a {kind} request", "errors": [
                                     {"reason": "backendError" if plan.status >= 500
                                      else "rateLimitExceeded", "domain": "global"}]}})
    handler.send_response(plan.status)
    handler.send_header("Content-Type", "application/json; charset=UTF-8")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body.encode())
    return True
