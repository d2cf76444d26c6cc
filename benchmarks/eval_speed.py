"""Evaluation speed: per-evaluation time, checkpoint pickup latency and idle CPU.

Needs TensorFlow 2.15 with tensorflow-estimator (the .venv-tf2.15 venv). One
run prints two tables:

1. Per-evaluation time on the demo's DNNClassifier (`trainexec.examples.
   estimator_job`, 500 eval examples) over the same 8 checkpoints, several
   rounds: `estimator.evaluate(checkpoint_path=...)` against trainexec's
   `EstimatorTarget.evaluate` (the persistent graph; its first evaluation,
   which builds the graph, is shown apart). Also: whether every metrics dict
   was identical, and the evaluator's resident memory over `--memory-evals`
   further persistent evaluations.
2. Pickup latency and idle CPU of four evaluators, each in its own process:
   trainexec's Estimator evaluator and `tf.estimator.train_and_evaluate`'s
   (the demo job as the `evaluator` task), trainexec's `SidecarEvaluator` and
   `tf.keras.utils.SidecarEvaluator` (the model of sidecar_benchmark.py). This
   process plays the trainer: it copies pre-made checkpoints into the watched
   directory one at a time, at random 1-2 s intervals, the way TensorFlow
   writes them (files renamed into place, the `checkpoint` state file last).
   Latency: from the state file naming a checkpoint to the evaluator starting
   to evaluate it (`EstimatorTarget.evaluate` / `Estimator.evaluate` called,
   `on_test_begin` for Keras), median and p95. Idle CPU: CPU seconds / wall
   seconds of the evaluator process once all checkpoints are evaluated (1.0 =
   one core). trainexec runs with `throttle_secs=0` and its default 1 s poll;
   tf.estimator with `throttle_secs=1` (its poll: with 0 it never sleeps).

    .venv-tf2.15/bin/python benchmarks/eval_speed.py [--checkpoints 20] [--idle-secs 10]
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
EVERY = 10  # Estimator training steps between checkpoints


def _quiet_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import logging

    import tensorflow as tf
    tf.get_logger().setLevel(logging.ERROR)
    return tf


def _percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# -- making checkpoints -----------------------------------------------------------

def train_estimator(model_dir, checkpoints):
    """The demo DNNClassifier's checkpoints 0, 10, ... (`checkpoints` + 1 of them)."""
    from trainexec.examples import estimator_job as job

    _quiet_tf()
    estimator = job.make_estimator(model_dir, save_checkpoints_steps=EVERY)
    estimator._config = estimator._config.replace(keep_checkpoint_max=checkpoints + 1)
    estimator.train(job._train_input_fn, max_steps=checkpoints * EVERY)


def train_keras(checkpoint_dir, checkpoints):
    sys.path.insert(0, HERE)
    import sidecar_benchmark

    _quiet_tf()
    sidecar_benchmark.run_trainer(checkpoint_dir, checkpoints, 0.0)


def copy_checkpoint(source_prefix, directory):
    """Copies a checkpoint in as TensorFlow writes one: data, then index, each
    renamed into place, then the `checkpoint` state file. Returns when it names it."""
    import tensorflow as tf

    prefix = os.path.join(directory, os.path.basename(source_prefix))
    files = sorted(glob.glob(source_prefix + ".*"), key=lambda f: f.endswith(".index"))
    for source in files:
        target = os.path.join(directory, os.path.basename(source))
        shutil.copyfile(source, target + ".tmp")
        os.replace(target + ".tmp", target)
    tf.compat.v1.train.update_checkpoint_state(directory, prefix)
    return time.time()


# -- 1. per-evaluation time -------------------------------------------------------

def per_evaluation(source_dir, work, rounds, memory_evals):
    from trainexec.examples import estimator_job as job
    from trainexec.estimator_trainer.target import EstimatorTarget

    _quiet_tf()
    steps = sorted(int(p.rsplit("-", 1)[1][:-len(".index")])
                   for p in glob.glob(os.path.join(source_dir, "model.ckpt-*.index")))
    chosen = steps[-8:]
    dirs = {}
    for name in ("tf", "trainexec"):
        dirs[name] = os.path.join(work, f"evaluate-{name}")
        shutil.copytree(source_dir, dirs[name], ignore=shutil.ignore_patterns("eval*"))
    _, eval_spec = job.build_specs(None)
    estimator = job.make_estimator(dirs["tf"], save_checkpoints_steps=EVERY)
    target = EstimatorTarget(job.make_estimator(dirs["trainexec"], EVERY), eval_spec)
    times = {"tf": [], "trainexec": []}
    results = {"tf": {}, "trainexec": {}}
    started = time.perf_counter()
    target.evaluate(os.path.join(dirs["trainexec"], f"model.ckpt-{chosen[0]}"))
    first = time.perf_counter() - started
    # One after the other, not interleaved: the garbage each estimator.evaluate
    # leaves (a whole graph) would be collected during the next evaluation.
    for name, evaluate in (
            ("tf", lambda path: estimator.evaluate(eval_spec.input_fn,
                                                   checkpoint_path=path)),
            ("trainexec", target.evaluate)):
        gc.collect()
        for _ in range(rounds):
            for step in chosen:
                path = os.path.join(dirs[name], f"model.ckpt-{step}")
                started = time.perf_counter()
                results[name][step] = evaluate(path)
                times[name].append(time.perf_counter() - started)
    same = results["tf"] == results["trainexec"]
    assert target.persistent, "the persistent path fell back"
    rss_before = _rss_mb()
    for index in range(memory_evals):
        step = chosen[index % len(chosen)]
        target.evaluate(os.path.join(dirs["trainexec"], f"model.ckpt-{step}"))
    rss_after = _rss_mb()
    ms = {k: [1000 * t for t in v] for k, v in times.items()}
    return {
        "evaluations": {k: len(v) for k, v in ms.items()},
        "median (ms)": {k: statistics.median(v) for k, v in ms.items()},
        "p95 (ms)": {k: _percentile(v, 0.95) for k, v in ms.items()},
        "first (graph build) (ms)": {"tf": None, "trainexec": 1000 * first},
        "metrics identical": {"tf": None, "trainexec": same},
        f"RSS before/after {memory_evals} more (MB)": {
            "tf": None, "trainexec": f"{rss_before:.0f} / {_rss_mb():.0f}"},
    }, rss_after - rss_before


def _rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- 2. the evaluator children ----------------------------------------------------

def child(kind, directory, stamps_path):
    """Runs one evaluator until killed, appending {"t", "step"} per evaluation start."""
    stamps = open(stamps_path, "a", buffering=1)

    def stamp(step):
        stamps.write(json.dumps({"t": time.time(), "step": int(step)}) + "\n")

    tf = _quiet_tf()
    if kind in ("trainexec-estimator", "tf-estimator"):
        from trainexec.examples import estimator_job as job

        if kind == "trainexec-estimator":
            from trainexec.estimator_trainer.target import EstimatorTarget as patched
        else:
            from tensorflow_estimator.python.estimator.estimator import Estimator as patched
        original = patched.evaluate

        def evaluate(self, *args, **kwargs):
            path = kwargs.get("checkpoint_path") or args[0]
            stamp(path.rsplit("-", 1)[1])
            return original(self, *args, **kwargs)

        patched.evaluate = evaluate
        ours = kind.startswith("trainexec")
        return job.main(["--model-dir", directory, "--max-steps", "0", "--start-delay-secs",
                         "0", "--throttle-secs", "0" if ours else "1",
                         "--api", "trainexec" if ours else "tf"])
    sys.path.insert(0, HERE)
    import sidecar_benchmark

    class Stamp(tf.keras.callbacks.Callback):
        def on_test_begin(self, logs=None):
            stamp(self.model.optimizer.iterations.numpy() // sidecar_benchmark.STEPS_PER_EPOCH)

    model, data = sidecar_benchmark._model(), sidecar_benchmark._data(1024)
    if kind == "keras-sidecar":
        tf.keras.utils.SidecarEvaluator(model, data, directory, callbacks=[Stamp()]).start()
    else:
        import trainexec

        trainexec.SidecarEvaluator(model, data, directory, callbacks=[Stamp()], verbose=0,
                                   state_dir=directory + "-state").start()


def pickup(kind, sources, work, count, idle_secs):
    """(latencies in s, idle CPU) of one evaluator following copied checkpoints."""
    import portpicker
    import psutil

    estimator = kind.endswith("estimator")
    source_dir = sources["estimator" if estimator else "keras"]
    directory = os.path.join(work, kind)
    os.makedirs(directory)
    names = sorted({os.path.basename(p)[:-len(".index")]
                    for p in glob.glob(os.path.join(source_dir, "*.index"))},
                   key=lambda n: int(n.rsplit("-", 1)[1]))
    first, rest = names[0], names[1:count + 1]
    copy_checkpoint(os.path.join(source_dir, first), directory)
    stamps_path = os.path.join(work, f"{kind}.jsonl")
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    if estimator:
        env["TF_CONFIG"] = json.dumps({
            "cluster": {"chief": [f"127.0.0.1:{portpicker.pick_unused_port()}"]},
            "task": {"type": "evaluator", "index": 0}})
    log = open(os.path.join(work, f"{kind}.log"), "w")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", kind,
                             directory, stamps_path], env=env, stdout=log,
                            stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        first_step = int(first.rsplit("-", 1)[1])
        _wait_for(stamps_path, first_step, proc, 120)
        time.sleep(3)  # the first evaluation (and any graph building) is done
        complete = {}
        for name in rest:
            time.sleep(random.uniform(1.0, 2.0))
            complete[int(name.rsplit("-", 1)[1])] = copy_checkpoint(
                os.path.join(source_dir, name), directory)
        last = max(complete)
        _wait_for(stamps_path, last, proc, 60)
        time.sleep(3)
        ps = psutil.Process(proc.pid)
        cpu0, t0 = sum(ps.cpu_times()[:2]), time.monotonic()
        time.sleep(idle_secs)
        cpu1, t1 = sum(ps.cpu_times()[:2]), time.monotonic()
    finally:
        proc.kill()
        proc.wait()
    started = _stamps(stamps_path)
    latencies = [started[step] - at for step, at in complete.items() if step in started]
    return latencies, (cpu1 - cpu0) / (t1 - t0), len(complete)


def _stamps(path):
    found = {}
    if os.path.exists(path):
        with open(path) as lines:
            for line in lines:
                entry = json.loads(line)
                found.setdefault(entry["step"], entry["t"])
    return found


def _wait_for(stamps_path, step, proc, timeout):
    deadline = time.monotonic() + timeout
    while step not in _stamps(stamps_path):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the evaluator never evaluated step {step} "
                               f"(exit code {proc.poll()}); see its log next to "
                               f"{stamps_path}")
        time.sleep(0.05)


# -- the report -------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("KIND", "DIR", "STAMPS"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--checkpoints", type=int, default=20,
                        help="checkpoints each evaluator picks up")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds over 8 checkpoints for the per-evaluation time")
    parser.add_argument("--memory-evals", type=int, default=1000)
    parser.add_argument("--idle-secs", type=float, default=10.0)
    parser.add_argument("--skip-pickup", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        return child(*args.child)
    work = tempfile.mkdtemp(prefix="eval-speed-")
    sources = {"estimator": os.path.join(work, "source-estimator"),
               "keras": os.path.join(work, "source-keras")}
    print(f"[eval_speed] work directory {work}; training the checkpoints ...", flush=True)
    train_estimator(sources["estimator"], max(args.checkpoints, 8))
    table, growth = per_evaluation(sources["estimator"], work, args.rounds,
                                   args.memory_evals)
    print("\nPer-evaluation time, demo DNNClassifier (500 examples), same checkpoints")
    print(f"{'':34}{'tf.estimator evaluate':>24}{'trainexec persistent':>24}")
    for row, cells in table.items():
        print(f"{row:34}" + "".join(f"{_fmt(cells[k]):>24}" for k in ("tf", "trainexec")))
    median = table["median (ms)"]
    print(f"trainexec / tf.estimator: {median['trainexec'] / median['tf']:.1%}; "
          f"RSS growth over {args.memory_evals} evaluations: {growth:+.1f} MB")
    if args.skip_pickup:
        return 0
    subprocess.run([sys.executable, os.path.abspath(__file__), "--train-keras-into",
                    sources["keras"], str(args.checkpoints + 1)], check=True,
                   env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3"),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kinds = {"trainexec-estimator": "trainexec Estimator",
             "tf-estimator": "tf.estimator evaluator",
             "trainexec-sidecar": "trainexec Sidecar",
             "keras-sidecar": "tf.keras SidecarEvaluator"}
    results = {}
    for kind, label in kinds.items():
        print(f"[eval_speed] pickup: {label} ...", flush=True)
        latencies, idle, copied = pickup(kind, sources, work, args.checkpoints,
                                         args.idle_secs)
        results[label] = {
            "checkpoints picked up": f"{len(latencies)}/{copied}",
            "latency median (s)": statistics.median(latencies) if latencies else None,
            "latency p95 (s)": _percentile(latencies, 0.95) if latencies else None,
            "latency worst (s)": max(latencies) if latencies else None,
            "idle CPU (share of a core)": idle,
        }
    print("\nCheckpoint pickup (state file names it -> evaluation starts), idle CPU")
    print(f"{'':28}" + "".join(f"{label:>27}" for label in results))
    for row in next(iter(results.values())):
        print(f"{row:28}" + "".join(f"{_fmt(r[row]):>27}" for r in results.values()))
    return 0


def _fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if value < 10 else f"{value:.1f}"
    return str(value)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--train-keras-into":
        train_keras(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(main())
