"""Checkpoint pickup on each storage a shared model_dir lives on: local, NFS-like, gs://.

For each storage, one host writes `--count` TensorFlow checkpoints (one every 1-2 s,
`storage_programs/write_checkpoints.py`) and two other hosts wait for them
(`storage_programs/watch_checkpoints.py`): trainexec's continuous evaluation loop
(1 s poll) and, side by side, the reference `tf.train.checkpoints_iterator` (what
tf.estimator's and Keras's evaluators wait with). Pickup latency is from a save
returning on the writer to the reader starting on that checkpoint or a newer one (a
reader that only ever sees the last checkpoint is that late for every one before it);
p50 and p95 over all the checkpoints written. "taken" counts the checkpoints each
reader started on (the others were superseded before it saw them).
"calls/idle poll" is what trainexec's loop asks the file system each poll while it
waits with nothing new (on gs:// each call is at least one request).

* `local`: every program on this machine, model_dir on its disk (no root needed).
* `nfs`: each program on its own host of a `trainexec.testing.TestBed`, model_dir on
  that host's FUSE view of one directory with NFS's default caching
  (`trainexec.testing.storage`: acregmax and acdirmax 60 s, lookupcache=all). Root,
  bindfs.
* `nfs-tuned`: the same with a mount tuned for shared checkpoints: `actimeo=3,
  lookupcache=positive` (no cached "no such file").
* `gs`: each program on its own host, model_dir in a bucket of a local GCS emulator
  (`trainexec.testing.gcs`) through TensorFlow's own gs:// file system. Root.
* `gs-stat0`: the same with TensorFlow's GCS stat cache off (`GCS_STAT_CACHE_MAX_AGE=0`).

    python benchmarks/storage_pickup.py [--storage local nfs gs] [--count 20]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "benchmarks", "storage_programs")


def _step(path: str) -> int:
    return int(os.path.basename(path).rsplit("-", 1)[-1])


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class _Local:
    """Every program here, on the local disk."""

    def __init__(self, workdir: str) -> None:
        self.model_dir = os.path.join(workdir, "model")
        self.env = dict(os.environ)

    def popen(self, host: str, argv: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(argv, env=self.env, **kwargs)

    def close(self) -> None:
        pass


@contextlib.contextmanager
def _place(storage: str, workdir: str):
    if storage == "local":
        yield _Local(workdir)
        return
    from trainexec.testing.netns import TestBed

    hosts = ["writer", "reader-trainexec", "reader-tf"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    if storage.startswith("nfs"):
        from trainexec.testing.storage import NFS_DEFAULTS, NfsCaching, SharedDir

        caching = (NfsCaching.from_nfs(acregmax=3, acdirmax=3, lookupcache="positive")
                   if storage == "nfs-tuned" else NFS_DEFAULTS)
        shared = SharedDir(os.path.join(workdir, "backing"), caching=caching)
        with TestBed(hosts, shared_dir=shared) as bed:
            place = _Bed(bed, shared.on_hosts("model"), env)
            yield place
        return
    from trainexec.testing.gcs import GcsEmulator

    with TestBed([*hosts, "gcs"], aliases={"gcs": GcsEmulator.HOST_NAMES}) as bed:
        emulator = GcsEmulator(os.path.join(workdir, "gcs"), address=bed.host("gcs").address,
                               run=lambda argv, **kw: bed.popen("gcs", argv, **kw))
        with emulator:
            extra = {"GCS_STAT_CACHE_MAX_AGE": "0"} if storage == "gs-stat0" else {}
            yield _Bed(bed, emulator.url("model"), {**env, **emulator.client_env(), **extra})


class _Bed:
    def __init__(self, bed, model_dir: str, env: dict) -> None:
        self.bed, self.model_dir, self.env = bed, model_dir, env

    def popen(self, host: str, argv: list[str], **kwargs) -> subprocess.Popen:
        return self.bed.popen(host, argv, env=self.env, **kwargs)


def run_storage(storage: str, count: int, idle_secs: float) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"pickup-{storage}-") as workdir:
        os.chmod(workdir, 0o755)
        with _place(storage, workdir) as place:
            outs = {name: os.path.join(workdir, f"{name}.json")
                    for name in ("writer", "trainexec", "tf")}
            logs = open(os.path.join(workdir, "programs.log"), "w")
            readers = {
                reader: place.popen(f"reader-{reader}", [
                    sys.executable, os.path.join(PROGRAMS, "watch_checkpoints.py"),
                    "--dir", place.model_dir, "--count", str(count), "--reader", reader,
                    "--out", outs[reader]], stdout=logs, stderr=subprocess.STDOUT)
                for reader in ("trainexec", "tf")}
            time.sleep(5)  # the readers start waiting first, as an evaluator does
            writer = place.popen("writer", [
                sys.executable, os.path.join(PROGRAMS, "write_checkpoints.py"),
                "--dir", place.model_dir, "--count", str(count),
                "--idle-secs", str(idle_secs), "--out", outs["writer"]],
                stdout=logs, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 60 + count * 2 + idle_secs + 180
            for proc in (writer, *readers.values()):
                try:
                    proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            logs.close()
            failed = {name: proc.returncode for name, proc in
                      {"writer": writer, **readers}.items() if proc.returncode != 0}
            if failed:
                raise RuntimeError(f"{storage}: {failed} failed; see "
                                   f"{open(os.path.join(workdir, 'programs.log')).read()[-3000:]}")
            saved = [(_step(s["checkpoint"]), s["saved_at"])
                     for s in json.load(open(outs["writer"]))]
            result = {}
            for reader in ("trainexec", "tf"):
                data = json.load(open(outs[reader]))
                picked = [(_step(s["checkpoint"]), s["picked_at"]) for s in data["seen"]]
                delays = [min(at for step, at in picked if step >= saved_step) - saved_at
                          for saved_step, saved_at in saved
                          if any(step >= saved_step for step, _ in picked)]
                idle = data["idle"]
                calls = sum(idle.get("calls", {}).values())
                result[reader] = {
                    "taken": len(picked), "p50": statistics.median(delays),
                    "p95": _percentile(delays, 0.95),
                    "calls_per_idle_poll": (calls / idle["polls"]) if idle.get("polls")
                    else None,
                    "calls": idle.get("calls")}
            return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storage", nargs="+",
                        default=["local", "nfs", "nfs-tuned", "gs", "gs-stat0"],
                        choices=("local", "nfs", "nfs-tuned", "gs", "gs-stat0"))
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--idle-secs", type=float, default=10.0)
    args = parser.parse_args()
    import tensorflow as tf

    print(f"# {time.strftime('%Y-%m-%d')}, TensorFlow {tf.__version__}, "
          f"{platform.machine()}, {os.cpu_count()} cores; {args.count} checkpoints per "
          "storage, one every 1-2 s")
    print(f"{'storage':9} {'reader':41} {'taken':>5} {'p50 s':>7} {'p95 s':>7} "
          f"{'calls/idle poll':>16}")
    for storage in args.storage:
        try:
            result = run_storage(storage, args.count, args.idle_secs)
        except Exception as err:  # one storage's failure is reported, the others run
            print(f"{storage:9} failed: {err}")
            continue
        for reader, label in (("trainexec", "trainexec loop (1 s poll)"),
                              ("tf", "reference: tf.train.checkpoints_iterator")):
            row = result[reader]
            calls = row["calls_per_idle_poll"]
            print(f"{storage:9} {label:41} {row['taken']:>5} {row['p50']:>7.2f} "
                  f"{row['p95']:>7.2f} {'' if calls is None else f'{calls:.1f}':>16}")
        print(f"{'':9} trainexec's idle calls: {result['trainexec']['calls']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
