"""Wall time of the demo cluster job: `trainexec launch` vs the reference way.

Same job both times (chief, 2 workers, 1 ps, evaluator; the Estimator of
`trainexec.examples.estimator_job`):

- trainexec: `trainexec launch --workers 2 --ps 1 --evaluator -- python -m
  trainexec.examples.estimator_job --api trainexec ...` (it stops the ps itself);
- reference: five hand-started processes, each with a hand-built TF_CONFIG,
  running `tf.estimator.train_and_evaluate` (`--api tf`); the ps is killed by hand
  once the chief and the evaluator have exited.

    python benchmarks/cluster_walltime.py [--max-steps 1500]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import portpicker


def job(model_dir: str, api: str, max_steps: int) -> list[str]:
    return [sys.executable, "-m", "trainexec.examples.estimator_job", "--model-dir",
            model_dir, "--api", api, "--max-steps", str(max_steps), "--throttle-secs", "5"]


def run_trainexec(model_dir: str, max_steps: int) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "trainexec", "launch", "--workers", "2", "--ps",
                    "1", "--evaluator", "--timeout", "900", "--",
                    *job(model_dir, "trainexec", max_steps)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - started


def run_by_hand(model_dir: str, max_steps: int) -> float:
    ports = [portpicker.pick_unused_port() for _ in range(4)]
    cluster = {"chief": [f"127.0.0.1:{ports[0]}"],
               "worker": [f"127.0.0.1:{ports[1]}", f"127.0.0.1:{ports[2]}"],
               "ps": [f"127.0.0.1:{ports[3]}"]}
    tasks = [("ps", 0), ("chief", 0), ("worker", 0), ("worker", 1), ("evaluator", 0)]
    started = time.monotonic()
    procs = {}
    for task_type, index in tasks:
        env = dict(os.environ, TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": task_type, "index": index}}))
        procs[(task_type, index)] = subprocess.Popen(
            job(model_dir, "tf", max_steps), env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
    try:
        for key in (("chief", 0), ("evaluator", 0), ("worker", 0), ("worker", 1)):
            if procs[key].wait(timeout=900) != 0:
                raise RuntimeError(f"{key} failed")
        return time.monotonic() - started
    finally:
        for proc in procs.values():  # the ps never exits: kill it by hand
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=1500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours = run_trainexec(os.path.join(tmp, "trainexec"), args.max_steps)
        theirs = run_by_hand(os.path.join(tmp, "reference"), args.max_steps)
    print(f"\nCluster job (chief, 2 workers, ps, evaluator), max_steps={args.max_steps}")
    print(f"{'':34}{'by hand + tf.estimator':>24}{'trainexec launch':>20}")
    print(f"{'wall time to a finished job':34}{theirs:>23.1f}s{ours:>19.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
