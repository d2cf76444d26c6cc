"""Training speed of the demo's Keras job on Keras 3 (trainexec's loop,
`trainexec.keras.fit.distributed_fit`) beside tf_keras (`model.fit`), under
MultiWorkerMirroredStrategy and ParameterServerStrategy.

The same job (`trainexec.examples.keras_job`: model, data, global batch 48, its
model compiled with `steps_per_execution` = `--steps-per-call`, 10 by default,
by benchmarks/keras_programs/keras_job_steps_per_call.py), so both run the same
number of steps per `tf.function` call; through `trainexec launch`'s LocalCluster: chief + 2 workers (plus a ps for
PSS), no evaluator, so that only training shares the machine. Steps per second
are the chief's, between its checkpoint at `--save-steps` and the last one (the
line times as the launcher reads them): start-up, tracing and the first
interval are left out. Each case runs `--repeats` times, the lines alternating;
the table shows the medians and the median of each repeat's loop / fit ratio
(the two runs of a pair are back to back, so the ratio holds better than the
rates when the machine's speed drifts).

    .venv/bin/python benchmarks/keras3_loop.py [--max-steps 1000] [--repeats 3]
        [--steps-per-call 10]
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

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_programs",
                       "keras_job_steps_per_call.py")

SAVED = re.compile(r"^\[chief:0\] INFO trainexec\.keras\.training: Saved checkpoint "
                   r"\S+ \(step (\d+)\)")
LINES = {"Keras 3 (trainexec's loop)": "0", "tf_keras (model.fit)": "1"}
STRATEGIES = {"MultiWorkerMirroredStrategy": 0, "ParameterServerStrategy": 1}


def steps_per_sec(legacy: str, ps: int, max_steps: int, save_steps: int,
                  steps_per_call: int) -> float:
    """The chief's training steps per second in one run of the demo job."""
    saves: list[tuple[float, int]] = []

    def output(line: str) -> None:
        found = SAVED.match(line)
        if found:
            saves.append((time.monotonic(), int(found.group(1))))

    with tempfile.TemporaryDirectory() as model_dir:
        command = [sys.executable, PROGRAM, "--model-dir",
                   model_dir, "--max-steps", str(max_steps), "--save-checkpoints-steps",
                   str(save_steps)]
        env = {"TF_USE_LEGACY_KERAS": legacy, "TF_CPP_MIN_LOG_LEVEL": "3",
               "TMPDIR": model_dir, "STEPS_PER_CALL": str(steps_per_call)}
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
    parser.add_argument("--steps-per-call", type=int, default=10,
                        help="steps_per_execution of the compiled model (the loop runs "
                             "10 steps per call when it is 1)")
    args = parser.parse_args()
    rates: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for strategy, ps in STRATEGIES.items():
            for line, legacy in LINES.items():
                rates.setdefault((strategy, line), []).append(
                    steps_per_sec(legacy, ps, args.max_steps, args.save_steps,
                                  args.steps_per_call))
    print(f"{'strategy':30} {'Keras 3 loop steps/s':>21} {'tf_keras fit steps/s':>21} "
          f"{'loop / fit':>10}  paired ratios")
    for strategy in STRATEGIES:
        loops, fits = (rates[(strategy, line)] for line in LINES)
        ratios = [a / b for a, b in zip(loops, fits)]
        print(f"{strategy:30} {statistics.median(loops):21.1f} "
              f"{statistics.median(fits):21.1f} {statistics.median(ratios):10.2f}  "
              + " ".join(f"{r:.2f}" for r in ratios), flush=True)
    loop_steps = args.steps_per_call if args.steps_per_call > 1 else 10
    print(f"(chief + 2 workers, + 1 ps for PSS; global batch 48; {args.steps_per_call} "
          f"step(s) per call for fit, {loop_steps} for the loop; median of "
          f"{args.repeats}, steps {args.save_steps}..{args.max_steps})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
