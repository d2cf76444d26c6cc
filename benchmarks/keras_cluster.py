"""KerasTrainer against hand-written MultiWorkerMirroredStrategy and
ParameterServerStrategy programs: wall time and lines of user code.

Same model, data and steps (`trainexec.examples.keras_job`), same cluster
through `trainexec launch` (chief, 2 workers, evaluator; plus a ps for PSS),
waiting for every task to end by itself. The programs are in
`benchmarks/keras_programs/`; the hand-written ones use trainexec's
`SidecarEvaluator` and `TrainingCompleteCallback` for their evaluator (Keras's
own evaluator never stops by itself). Runs on tf_keras (TF_USE_LEGACY_KERAS=1),
as a cluster needs Keras 2 on current TensorFlow.

    TF_USE_LEGACY_KERAS=1 .venv/bin/python benchmarks/keras_cluster.py [--max-steps 400]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from trainexec.launch import LocalCluster

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_programs")
CASES = [  # (strategy, ps tasks, program)
    ("MultiWorkerMirroredStrategy", 0, "with_trainexec.py"),
    ("MultiWorkerMirroredStrategy", 0, "mwms_by_hand.py"),
    ("ParameterServerStrategy", 1, "with_trainexec.py"),
    ("ParameterServerStrategy", 1, "pss_by_hand.py"),
]


def lines_of_code(path: str) -> int:
    """Non-blank lines that are not comments."""
    with open(path) as f:
        return sum(1 for line in f if line.strip() and not line.strip().startswith("#"))


def run(program: str, ps: int, max_steps: int) -> tuple[float, bool, str]:
    with tempfile.TemporaryDirectory() as model_dir:
        command = [sys.executable, os.path.join(PROGRAMS, program), model_dir, str(max_steps)]
        wait_for = ["chief", "worker", "evaluator"] + (["ps"] if ps else [])
        started = time.monotonic()
        with LocalCluster(command, workers=2, ps=ps, evaluator=True, wait_for=wait_for,
                          output=lambda line: None) as cluster:
            result = cluster.wait(timeout=600)
        return time.monotonic() - started, result.ok, result.reason


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=400)
    args = parser.parse_args()
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    print(f"{'strategy':30} {'program':20} {'lines':>5} {'wall s':>7}  outcome")
    for strategy, ps, program in CASES:
        secs, ok, reason = run(program, ps, args.max_steps)
        print(f"{strategy:30} {program:20} {lines_of_code(os.path.join(PROGRAMS, program)):5d} "
              f"{secs:7.1f}  {'ok' if ok else 'FAILED: ' + reason}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
