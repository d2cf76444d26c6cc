"""trainexec.estimator against tf.estimator: training steps/s and per-evaluation cost.

The same model and the same data (the demo's blobs) run three ways, each in its own
process. The model (`--models`, several separated by commas): `custom`, the Estimator
job's own `model_fn` (`trainexec.examples.estimator_job.model_fn`: 16 hidden units,
Adam); or a canned estimator as `trainexec.examples.canned_job` builds it on each
engine: `dnn` (`DNNClassifier`, 16 hidden units, "Adam"), `linear`
(`LinearClassifier` on the features and their buckets, "Ftrl"), `wide_deep`
(`DNNLinearCombinedClassifier`, both), optimizers by name, at the canned estimators'
default learning rates. The three ways:

1. tf.estimator's `Estimator` on TensorFlow 2.15 (the reference);
2. `trainexec.estimator.Estimator` on TensorFlow 2.15;
3. `trainexec.estimator.Estimator` on current TensorFlow.

Each trains `--warmup` steps, then times `train(steps=--steps)` (graph building and
session creation included, as a user pays them), then evaluates the same `--evals`
checkpoints (500 eval examples) two ways: `estimator.evaluate(checkpoint_path=...)`
(a new graph and session per checkpoint, as `tf.estimator.train_and_evaluate`'s
evaluator did) and the evaluator task's persistent graph (trainexec's `EstimatorTarget`:
`PersistentEvaluation` for tf.estimator's Estimator, `Estimator.persistent_evaluation`
for trainexec's). The three processes run in turn, `--rounds` times (this machine's
timings vary by up to 2x from run to run); one table, side by side: medians over the
rounds of each run's median over its checkpoints.

    .venv-tf2.15/bin/python benchmarks/native_estimator.py [--steps 2000] [--evals 8]
                                [--rounds 5] [--models custom|dnn,linear,wide_deep]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = (("tf.estimator", "tf2.15", "tf"), ("trainexec.estimator", "tf2.15", "native"),
        ("trainexec.estimator", "current", "native"))
MODELS = ("custom", "dnn", "linear", "wide_deep")


def measure(engine: str, model: str, steps: int, warmup: int, evals: int) -> dict:
    """One engine's figures for one model, in this process."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import logging

    import tensorflow as tf
    tf.get_logger().setLevel(logging.ERROR)
    from trainexec.estimator_trainer.target import EstimatorTarget
    from trainexec.examples import estimator_job as job
    from trainexec.examples.canned_job import make_canned_estimator
    from trainexec.specs import EvalSpec

    model_dir = tempfile.mkdtemp(prefix=f"bench-{engine}-")
    every = max(1, steps // evals)
    api = job.engine_module(engine)
    if model == "custom":  # the same model_fn on each engine's Estimator
        config = api.RunConfig(model_dir=model_dir, save_checkpoints_steps=every,
                               keep_checkpoint_max=evals + 2, log_step_count_steps=500)
        estimator = api.Estimator(job.model_fn, config=config, params={"engine": engine})
    else:  # each engine's own canned estimator, built alike (optimizers by name,
        # which tf.estimator's canned estimators take as trainexec's do)
        estimator = make_canned_estimator(model_dir, every, model, engine=engine,
                                          dnn_optimizer="Adam", linear_optimizer="Ftrl")
    train_spec, eval_spec = job.build_specs(None, engine=engine)
    estimator.train(train_spec.input_fn, max_steps=warmup)
    started = time.perf_counter()
    estimator.train(train_spec.input_fn, steps=steps)
    train_secs = time.perf_counter() - started
    checkpoints = tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths[-evals:]
    per_graph = []
    for path in checkpoints:
        started = time.perf_counter()
        estimator.evaluate(eval_spec.input_fn, checkpoint_path=path)
        per_graph.append(time.perf_counter() - started)
    target = EstimatorTarget(estimator, EvalSpec(eval_spec.input_fn), persistent=True)
    persistent = []
    try:
        for path in checkpoints:
            started = time.perf_counter()
            metrics = target.evaluate(path)
            persistent.append(time.perf_counter() - started)
    finally:
        target.close()
    return {"tensorflow": tf.__version__, "steps_per_sec": steps / train_secs,
            "evaluate_secs": statistics.median(per_graph),
            "persistent_first_secs": persistent[0],
            "persistent_secs": statistics.median(persistent[1:] or persistent),
            "accuracy": float(metrics["accuracy"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--evals", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--models", default="custom",
                        help=f"models to measure, separated by commas: {', '.join(MODELS)}")
    parser.add_argument("--tf215-python", default=os.path.join(ROOT, ".venv-tf2.15/bin/python"))
    parser.add_argument("--current-python", default=os.path.join(ROOT, ".venv/bin/python"))
    parser.add_argument("--measure", choices=("tf", "native"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"--models {args.models}: unknown {', '.join(unknown)}; choose among "
                     f"{', '.join(MODELS)}")
    if args.measure:
        print(json.dumps(measure(args.measure, models[0], args.steps, args.warmup,
                                 args.evals)))
        return 0
    for model in models:
        status = compare(model, args)
        if status:
            return status
    return 0


def compare(model: str, args: argparse.Namespace) -> int:
    """Every run of RUNS for `model`, `--rounds` times in turn; its table."""
    pythons = {"tf2.15": args.tf215_python, "current": args.current_python}
    measured: dict[int, list[dict]] = {index: [] for index in range(len(RUNS))}
    for _ in range(args.rounds):
        for index, (name, line, engine) in enumerate(RUNS):
            done = subprocess.run(
                [pythons[line], os.path.abspath(__file__), "--measure", engine, "--models",
                 model, "--steps", str(args.steps), "--warmup", str(args.warmup),
                 "--evals", str(args.evals)],
                capture_output=True, text=True, cwd=ROOT,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
            if done.returncode != 0:
                print(f"{name} ({model}) on {line} failed:\n{done.stderr[-2000:]}",
                      file=sys.stderr)
                return 1
            measured[index].append(json.loads(done.stdout.strip().splitlines()[-1]))
    rows = []
    for index, (name, _, _) in enumerate(RUNS):
        runs = measured[index]
        row = {key: statistics.median(run[key] for run in runs)
               for key in runs[0] if key != "tensorflow"}
        row["tensorflow"] = runs[0]["tensorflow"]
        rows.append((name, row))
    print(f"model {model}: {args.steps} training steps after {args.warmup}; {args.evals} "
          f"checkpoints evaluated (500 examples); medians of {args.rounds} rounds")
    print(f"{'engine':22} {'TF':8} {'steps/s':>8} {'evaluate()':>11} {'persistent':>11} "
          f"{'(first)':>8} {'accuracy':>9}")
    for name, row in rows:
        print(f"{name:22} {row['tensorflow']:8} {row['steps_per_sec']:8.0f} "
              f"{row['evaluate_secs']:10.3f}s {row['persistent_secs']:10.4f}s "
              f"{row['persistent_first_secs']:7.3f}s {row['accuracy']:9.3f}")
    reference = rows[0][1]
    for name, row in rows[1:]:
        print(f"{name} on {row['tensorflow']}: training "
              f"{row['steps_per_sec'] / reference['steps_per_sec']:.2f}x tf.estimator's "
              f"speed; a persistent evaluation costs "
              f"{row['persistent_secs'] / reference['evaluate_secs']:.3f}x tf.estimator's "
              "evaluate()")
    return 0


if __name__ == "__main__":
    sys.exit(main())
