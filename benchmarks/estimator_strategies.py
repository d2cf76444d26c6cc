"""Estimators under a distribution strategy: training steps/s of a 2-worker cluster.

The same `model_fn` (`trainexec.examples.estimator_job.model_fn`: 16 hidden units, Adam,
on the demo's blobs, 32 examples per replica) trains in a cluster of this machine's
processes, started by `trainexec.launch.LocalCluster` as `trainexec launch` starts them:

1. tf.estimator 2.15, MultiWorkerMirroredStrategy, two workers (no chief), through
   `tf.estimator.train_and_evaluate` (its distribute coordinator);
2. trainexec.estimator, MultiWorkerMirroredStrategy, two workers, through
   `trainexec.train_and_evaluate`, on TensorFlow 2.15 and on current TensorFlow;
3. trainexec.estimator without a strategy: the between-graph ps form (a chief, a worker
   and a ps), on current TensorFlow.

Steps/s is the rate of the global step the leading task (worker 0, or the chief) sees,
from its `--warmup`-th step to its last (graph building and session creation left
out): under MultiWorkerMirroredStrategy every task runs every step, one batch per
worker; in the ps form each task steps the global step on its own batch. So the examples
per second are steps/s x 64 for MultiWorkerMirroredStrategy, steps/s x 32 for the ps
form. Each configuration runs `--rounds` times, in turn; medians.

    .venv/bin/python benchmarks/estimator_strategies.py [--steps 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (name, TensorFlow line, api, strategy)
RUNS = (("tf.estimator, MWMS, 2 workers", "tf2.15", "tf", "mwms"),
        ("trainexec.estimator, MWMS, 2 workers", "tf2.15", "native", "mwms"),
        ("trainexec.estimator, MWMS, 2 workers", "current", "native", "mwms"),
        ("trainexec.estimator, ps (chief, worker, ps)", "current", "native", "ps-form"))
PREFIX = "BENCH "


def _task(api_name: str, strategy: str, model_dir: str, steps: int, warmup: int) -> int:
    """One task of the cluster (TF_CONFIG set by the launcher)."""
    import logging

    import tensorflow as tf
    tf.get_logger().setLevel(logging.ERROR)
    from trainexec.examples import estimator_job as job

    role = json.loads(os.environ["TF_CONFIG"])["task"]
    leads = (role["type"], role["index"]) in (("chief", 0), ("worker", 0)) and (
        strategy == "mwms" or role["type"] == "chief")
    mwms = (tf.distribute.experimental.MultiWorkerMirroredStrategy()
            if strategy == "mwms" and role["type"] != "ps" else None)
    api = job.engine_module(api_name)
    config = api.RunConfig(model_dir=model_dir, save_checkpoints_steps=steps,
                           save_summary_steps=None,
                           log_step_count_steps=10 * steps, train_distribute=mwms)
    estimator = api.Estimator(job.model_fn, config=config, params={"engine": api_name})

    class Rate(tf.compat.v1.train.SessionRunHook):
        def __init__(self):
            self.seen: list[tuple[float, int]] = []

        def begin(self):
            self.step = tf.compat.v1.train.get_global_step()

        def before_run(self, run_context):
            return tf.compat.v1.train.SessionRunArgs(self.step)

        def after_run(self, run_context, run_values):
            self.seen.append((time.perf_counter(), int(run_values.results)))

    rate = Rate()
    train_spec, eval_spec = job.build_specs(steps, throttle_secs=3600, train_hooks=[rate],
                                            engine=api_name)
    if api_name == "tf":
        job.tf_estimator().train_and_evaluate(estimator, train_spec, eval_spec)
    else:
        import trainexec
        trainexec.train_and_evaluate(estimator, train_spec, eval_spec,
                                     worker_delay=trainexec.WorkerDelay(0))
    timed = [(at, step) for at, step in rate.seen if step >= warmup]
    if leads and len(timed) > 1:
        (start, first), (end, last) = timed[0], timed[-1]
        print(PREFIX + json.dumps({"tensorflow": tf.__version__,
                                   "steps_per_sec": (last - first) / (end - start)}),
              flush=True)
    return 0


def _cluster(python: str, api: str, strategy: str, steps: int, warmup: int) -> dict:
    from trainexec.launch import LocalCluster

    model_dir = tempfile.mkdtemp(prefix=f"bench-{api}-{strategy}-")
    command = [python, os.path.abspath(__file__), "--task", api, strategy, model_dir,
               "--steps", str(steps), "--warmup", str(warmup)]
    lines: list[str] = []
    ps_form = strategy == "ps-form"
    with LocalCluster(command, workers=1 if ps_form else 2, ps=1 if ps_form else 0,
                      chief=ps_form, grace_secs=3, output=lines.append,
                      wait_for=["chief", "worker", "ps"] if ps_form else ["worker"],
                      env={"TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ROOT}) as cluster:
        result = cluster.wait(timeout=900)
    found = [line.split(PREFIX, 1)[1] for line in lines if PREFIX in line]
    if not result.ok or not found:
        raise RuntimeError(f"{api} {strategy}: {result.reason}\n" + "\n".join(lines[-40:]))
    return json.loads(found[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tf215-python", default=os.path.join(ROOT, ".venv-tf2.15/bin/python"))
    parser.add_argument("--current-python", default=os.path.join(ROOT, ".venv/bin/python"))
    parser.add_argument("--task", nargs=3, metavar=("API", "STRATEGY", "MODEL_DIR"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.task:
        return _task(*args.task, steps=args.steps, warmup=args.warmup)
    pythons = {"tf2.15": args.tf215_python, "current": args.current_python}
    measured: dict[int, list[dict]] = {index: [] for index in range(len(RUNS))}
    for _ in range(args.rounds):
        for index, (_, line, api, strategy) in enumerate(RUNS):
            measured[index].append(_cluster(pythons[line], api, strategy, args.steps,
                                            args.warmup))
    print(f"{args.steps} global steps, timed from step {args.warmup}; "
          f"medians of {args.rounds} rounds")
    print(f"{'job':46} {'TF':8} {'steps/s':>8} {'examples/s':>11}")
    for index, (name, _, _, strategy) in enumerate(RUNS):
        rate = statistics.median(run["steps_per_sec"] for run in measured[index])
        per_step = 32 if strategy == "ps-form" else 64
        print(f"{name:46} {measured[index][0]['tensorflow']:8} {rate:8.1f} "
              f"{rate * per_step:11.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
