"""Training speed of the demo's Keras job on Keras 3 (trainexec's loop,
`trainexec.keras.distributed_fit`) beside tf_keras (`model.fit`), under
MultiWorkerMirroredStrategy and ParameterServerStrategy.

The same job (`trainexec.examples.keras_job`: model, data, global batch 48),
through `trainexec launch`'s LocalCluster: chief + 2 workers (plus a ps for
PSS), no evaluator, so that only training shares the machine. Steps per second
are the chief's, between its checkpoint at `--save-steps` and the last one (the
line times as the launcher reads them): start-up, tracing and the first
interval are left out. Each case runs `--repeats` times, the lines alternating;
the table shows the median.

    .venv/bin/python benchmarks/keras3_loop.py [--max-steps 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time

from trainexec.launch import LocalCluster

SAVED = re.compile(r"^\[chief:0\] INFO trainexec\.keras\.training: Saved checkpoint "
                   r"\S+ \(step (\d+)\)")
LINES = {"Keras 3 (trainexec's loop)": "0", "tf_keras (model.fit)": "1"}
STRATEGIES = {"MultiWorkerMirroredStrategy": 0, "ParameterServerStrategy": 1}


def steps_per_sec(legacy: str, ps: int, max_steps: int, save_steps: int) -> float:
    """The chief's training steps per second in one run of the demo job."""
    saves: list[tuple[float, int]] = []

    def output(line: str) -> None:
        found = SAVED.match(line)
        if found:
            saves.append((time.monotonic(), int(found.group(1))))

    with tempfile.TemporaryDirectory() as model_dir:
        command = [sys.executable, "-m", "trainexec.examples.keras_job", "--model-dir",
                   model_dir, "--max-steps", str(max_steps), "--save-checkpoints-steps",
                   str(save_steps)]
        env = {"TF_USE_LEGACY_KERAS": legacy, "TF_CPP_MIN_LOG_LEVEL": "3",
               "TMPDIR": model_dir}
        with LocalCluster(command, workers=2, ps=ps, env=env, output=output,
                          wait_for=["chief", "worker"] + (["ps"] if ps else [])) as cluster:
            result = cluster.wait(timeout=900)
    if not result.ok or len(saves) < 2:
        raise RuntimeError(f"the job failed: {result.reason}")
    (t0, s0), (t1, s1) = saves[0], saves[-1]
    return (s1 - s0) / (t1 - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=1000)
    parser.add_argument("--save-steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rates: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for strategy, ps in STRATEGIES.items():
            for line, legacy in LINES.items():
                rates.setdefault((strategy, line), []).append(
                    steps_per_sec(legacy, ps, args.max_steps, args.save_steps))
    print(f"{'strategy':30} {'Keras 3 loop steps/s':>21} {'tf_keras fit steps/s':>21} "
          f"{'loop / fit':>10}")
    for strategy in STRATEGIES:
        loop, fit = (statistics.median(rates[(strategy, line)]) for line in LINES)
        print(f"{strategy:30} {loop:21.1f} {fit:21.1f} {loop / fit:10.2f}", flush=True)
    print(f"(chief + 2 workers, + 1 ps for PSS; global batch 48; median of "
          f"{args.repeats}, steps {args.save_steps}..{args.max_steps})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
