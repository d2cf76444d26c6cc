"""A chief that starts after its workers: tf.estimator vs trainexec.

A non-chief worker waits until the chief has initialized the model. TensorFlow
re-checks every 30 s; trainexec's workers re-check every `poll_secs` (1 s).
This runs the same short job (chief, 2 workers, 1 ps; the Estimator of
`trainexec.examples.estimator_job`) with the chief starting `--late-chief-secs`
after the workers, once with `tf.estimator.train_and_evaluate` and once with
trainexec's, both under `LocalCluster` waiting for the chief and every worker,
and prints the wall time and each task's share of the training steps.

    python benchmarks/late_chief.py [--late-chief-secs 15] [--max-steps 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from trainexec.examples.estimator_job import local_training_steps
from trainexec.launch import LocalCluster

TASKS = ("chief:0", "worker:0", "worker:1")


def run(api: str, model_dir: str, late_secs: float, max_steps: int) -> dict:
    command = [sys.executable, "-m", "trainexec.examples.estimator_job", "--api", api,
               "--model-dir", model_dir, "--max-steps", str(max_steps),
               "--late-chief-secs", str(late_secs)]
    lines: list[str] = []
    with LocalCluster(command, workers=2, ps=1, output=lines.append,
                      wait_for=["chief", "worker"]) as cluster:
        result = cluster.wait(timeout=900)
    if not result.ok:
        raise RuntimeError(f"{api}: {result.reason}")
    return {"wall": result.elapsed_secs,
            "steps": {task: local_training_steps(lines, task) for task in TASKS}}


def _shown(steps: int | None) -> str:
    return "?" if steps is None else str(steps)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--late-chief-secs", type=float, default=15)
    parser.add_argument("--max-steps", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = {api: run(api, os.path.join(tmp, api), args.late_chief_secs, args.max_steps)
                   for api in ("tf", "trainexec")}
    print(f"\nChief starting {args.late_chief_secs:g}s after its workers "
          f"(chief, 2 workers, ps), max_steps={args.max_steps}")
    print(f"{'':32}{'tf.estimator':>16}{'trainexec':>16}")
    print(f"{'wall time to a finished job':32}"
          + "".join(f"{figures[api]['wall']:>15.1f}s" for api in ("tf", "trainexec")))
    for task in TASKS:
        print(f"{'training steps run by ' + task:32}"
              + "".join(f"{_shown(figures[api]['steps'][task]):>16}"
                        for api in ("tf", "trainexec")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
