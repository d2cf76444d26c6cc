"""`GcsEmulator`: the emulator process started where it should live (here, or on a test
bed's host), waited for, stopped and cleaned up; what a client needs to reach it."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Sequence

from trainexec.testing.gcs.faults import FaultFile, FaultPlan
from trainexec.testing.gcs.server import READY, object_path
from trainexec.testing.gcs.tls import HOST_NAMES, make_certificates

__all__ = ["GcsEmulator", "unavailable"]

_TOKEN = "trainexec-test-token"


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
        self._cert = self._key = ""
        self.log_path = ""
        self.faults_path = ""

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
        path = object_path(self.bucket, name.lstrip("/"))
        try:
            with open(os.path.join(self._dir, "data", ".cloudstorage", path), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def list_objects(self, prefix: str = "") -> dict[str, int]:
        """The live objects whose names start with `prefix`, with their sizes, as the
        emulator's metadata file holds them (read from its files, like
        `read_object`). The emulator rewrites that file in place, so a read that
        catches it mid-write is read again."""
        if self._dir is None:
            raise RuntimeError("the GCS emulator is not started: use it inside `with`")
        meta = os.path.join(self._dir, "data", ".cloudstorage", ".meta")
        for _ in range(50):
            try:
                with open(meta, "rb") as f:
                    objects = json.loads(f.read()).get("objects", {}).get(self.bucket, {})
                break
            except FileNotFoundError:
                return {}
            except ValueError:  # caught mid-write
                time.sleep(0.02)
        else:
            raise RuntimeError(f"{meta} stayed unreadable for 1 s")
        return {name: int(obj.get("size", 0)) for name, obj in objects.items()
                if name.startswith(prefix)}

    # -- misbehaving ---------------------------------------------------------------------
    def inject(self, plan: FaultPlan | None) -> None:
        """From now on, requests get `plan`'s fault until its end (None: no fault);
        see `trainexec.testing.gcs.faults`."""
        if not self.faults_path:
            raise RuntimeError("the GCS emulator is not started: use it inside `with`")
        FaultFile.write(self.faults_path, plan)

    def clear_faults(self) -> None:
        self.inject(None)

    def pause(self) -> None:
        """An outage: the emulator stops answering (SIGSTOP; connections hang, none is
        refused) until `resume()`."""
        if self._proc is None:
            raise RuntimeError("the GCS emulator is not running")
        self._signal(self._proc, signal.SIGSTOP)

    def resume(self) -> None:
        if self._proc is not None:
            self._signal(self._proc, signal.SIGCONT)

    # -- running ------------------------------------------------------------------------
    def __enter__(self) -> "GcsEmulator":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def prepare(self) -> None:
        """Makes the emulator's directory and certificates, so that `client_env()`
        answers before the emulator runs (a job's environment is written before
        the hosts exist); `start()` does it when it has not been done."""
        if self._dir is not None:
            return
        os.makedirs(self.root, exist_ok=True)
        self._dir = tempfile.mkdtemp(prefix="gcs-", dir=self.root)
        os.chmod(self._dir, 0o755)
        try:
            self.ca_path, self._cert, self._key = make_certificates(self._dir)
        except BaseException:
            self.stop()
            raise

    def start(self, *, address: str | None = None,
              run: Callable[..., subprocess.Popen] | None = None) -> None:
        """Makes the certificates (`prepare`), starts the emulator and waits until it
        answers; `address` and `run`, when given, replace the constructor's."""
        if self._proc is not None:
            raise RuntimeError("the GCS emulator is already running")
        reason = unavailable(self.port)
        if reason:
            raise RuntimeError(reason)
        self.address = address or self.address
        self._run = run or self._run
        self.prepare()
        assert self._dir is not None
        cert, key = self._cert, self._key
        try:
            data = os.path.join(self._dir, "data")
            os.makedirs(data)
            self.log_path = os.path.join(self._dir, "emulator.log")
            self.faults_path = os.path.join(self._dir, "faults.json")
            argv = [sys.executable, "-m", "trainexec.testing.gcs", "--address", self.address,
                    "--port", str(self.port), "--bucket", self.bucket, "--data", data,
                    "--cert", cert, "--key", key, "--ca", self.ca_path,
                    "--faults", self.faults_path]
            if os.environ.get("TRAINEXEC_GCS_VERBOSE"):
                argv.append("--verbose")
            # trainexec importable there too, installed or not.
            package_parent = os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.dirname(os.path.abspath(__file__)))))
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
        if line.strip() != READY:
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
            self._signal(proc, signal.SIGCONT)  # a paused emulator ends too
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
