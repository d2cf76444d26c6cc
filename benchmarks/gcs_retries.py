"""How long TensorFlow's own GCS client rides out a bucket that misbehaves.

On a `trainexec.testing.TestBed` with `trainexec.testing.gcs`'s emulator (root), one client
process per row does one gs:// operation while the emulator answers 503 (or 429) to that
kind of request, or is paused (an outage: connections hang), for FAULT seconds; it prints
how long the operation took and how it ended. With a fault longer than the client's
retries, the row shows when TensorFlow gives up, and the error it gives.

    .venv/bin/python benchmarks/gcs_retries.py            # the default rows
    .venv/bin/python benchmarks/gcs_retries.py --long     # faults of 600 s: when TF gives up
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "tests", "gcs_programs", "faults_client.py")
sys.path.insert(0, ROOT)


def run_row(bed, emulator, op, url, fault) -> dict:
    """`op` of TensorFlow's client on `url` with `fault()` started just before it."""
    env = {**os.environ, **emulator.client_env(), "TF_CPP_MIN_LOG_LEVEL": "3",
           "PYTHONPATH": ROOT}
    proc = bed.popen("client", [sys.executable, PROGRAM, op, url, "--wait"], env=env,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout.readline().strip() == "ready"
    stop = fault()
    proc.stdin.write("go\n")
    proc.stdin.flush()
    out = proc.stdout.read()
    proc.wait()
    stop()
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    from trainexec.testing.gcs import GcsEmulator
    from trainexec.testing.gcs.faults import FaultPlan
    from trainexec.testing.netns import TestBed, unavailable

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="faults of 600 s")
    args = parser.parse_args()
    why = unavailable()
    if why:
        print(f"cannot run here: {why}")
        return 2
    secs = 600.0 if args.long else 20.0
    rows = [("503 on reads", "stat", lambda em: em.inject(FaultPlan(
                "error", status=503, kinds=("read", "metadata"), secs=secs))),
            ("429 on uploads", "write", lambda em: em.inject(FaultPlan(
                "error", status=429, kinds=("upload",), secs=secs))),
            ("outage (paused)", "stat", lambda em: (em.pause(), threading.Timer(
                secs, em.resume).start()))]
    with tempfile.TemporaryDirectory() as root, \
            TestBed(["gcs", "client"], aliases={"gcs": GcsEmulator.HOST_NAMES}) as bed:
        emulator = GcsEmulator(os.path.join(root, "gcs"), address=bed.host("gcs").address,
                               run=lambda argv, **kw: bed.popen("gcs", argv, **kw))
        with emulator:
            print(f"fault length {secs:g} s (TensorFlow {_tf_version()})")
            for name, op, start in rows:
                url = emulator.url(f"bench/{op}")
                run_row(bed, emulator, "write", url, lambda: (lambda: None))
                seen = run_row(bed, emulator, op, url, lambda: (
                    start(emulator), lambda: (emulator.clear_faults(), emulator.resume())
                )[1])
                ended = seen["error"] or "succeeded"
                print(f"{name:18} {op:6} {seen['secs']:7.1f} s  {ended[:110]}")
    return 0


def _tf_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("tensorflow")


if __name__ == "__main__":
    sys.exit(main())
