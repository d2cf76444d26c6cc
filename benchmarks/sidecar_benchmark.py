"""Keras's SidecarEvaluator against trainexec's, following the same live training job.

For each evaluator the benchmark starts the evaluator in a child process, then a
trainer child that runs `model.fit` for EPOCHS epochs with `ModelCheckpoint`
(`ckpt-{epoch}`, weights only) and `TrainingCompleteCallback`, sleeping SLEEP
seconds after each checkpoint. The Keras evaluator gets `max_evaluations=EPOCHS`
so it can stop; trainexec's gets no count. Either is killed if it has not
stopped GRACE seconds after training ends. Both evaluators use their default
polling (1 s). It then prints, side by side:

* checkpoints produced and checkpoints evaluated;
* latency: from a checkpoint being complete (mtime of its `.index`) to its
  evaluation starting (`on_test_begin` of a callback in the evaluator), median
  and worst;
* idle CPU: CPU seconds / wall seconds of the evaluator process in the gaps
  between the end of an evaluation and the next checkpoint (psutil samples);
* whether the evaluator stopped by itself, and how long after the last
  checkpoint was complete (and after the trainer exited) it exited. The
  trainer records completion after its last sleep, so an evaluator without a
  count learns that the last checkpoint is the last only then.

Usage::

    .venv/bin/python benchmarks/sidecar_benchmark.py [--epochs 10] [--sleep 2.5]
"""

from __future__ import annotations

import argparse
import bisect
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS_PER_EPOCH = 8
FEATURES = 4


# -- the child processes ----------------------------------------------------------

def _model():
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Input((FEATURES,)),
                                 tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse", metrics=["mae"])
    return model


def _data(n):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, FEATURES)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(32)


def run_trainer(checkpoint_dir, epochs, sleep_secs):
    import tensorflow as tf

    from trainexec import TrainingCompleteCallback

    pause = tf.keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: time.sleep(sleep_secs))
    _model().fit(_data(256).repeat(), steps_per_epoch=STEPS_PER_EPOCH, epochs=epochs,
                 verbose=0, callbacks=[
                     tf.keras.callbacks.ModelCheckpoint(
                         os.path.join(checkpoint_dir, "ckpt-{epoch}"), save_weights_only=True),
                     pause, TrainingCompleteCallback(checkpoint_dir)])


def run_evaluator(kind, checkpoint_dir, epochs, events_path):
    import tensorflow as tf

    events = open(events_path, "a", buffering=1)

    class Timeline(tf.keras.callbacks.Callback):
        def _log(self, event):
            step = int(self.model.optimizer.iterations.numpy())
            events.write(json.dumps({"event": event, "t": time.time(), "step": step}) + "\n")

        def on_test_begin(self, logs=None):
            self._log("begin")

        def on_test_end(self, logs=None):
            self._log("end")

    model, data = _model(), _data(1024)
    if kind == "keras":
        tf.keras.utils.SidecarEvaluator(model, data, checkpoint_dir,
                                        max_evaluations=epochs,
                                        callbacks=[Timeline()]).start()
    else:
        import trainexec

        trainexec.SidecarEvaluator(model, data, checkpoint_dir, callbacks=[Timeline()],
                                   state_dir=os.path.dirname(events_path),
                                   verbose=0).start()


# -- the measuring parent ---------------------------------------------------------

def measure(kind, epochs, sleep_secs, grace_secs):
    import psutil

    work = tempfile.mkdtemp(prefix=f"sidecar-bench-{kind}-")
    checkpoint_dir = os.path.join(work, "ckpts")
    os.makedirs(os.path.join(work, "eval"))
    events_path = os.path.join(work, "eval", "events.jsonl")
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    me = [sys.executable, os.path.abspath(__file__)]
    quiet = dict(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    evaluator = subprocess.Popen(me + ["evaluator", kind, checkpoint_dir, str(epochs),
                                       events_path], **quiet)
    trainer = subprocess.Popen(me + ["trainer", checkpoint_dir, str(epochs),
                                     str(sleep_secs)], **quiet)
    proc = psutil.Process(evaluator.pid)
    samples = []  # (wall time, evaluator cpu seconds)
    trained_at = killed = None
    while evaluator.poll() is None:
        try:
            cpu = proc.cpu_times()
            samples.append((time.time(), cpu.user + cpu.system))
        except psutil.Error:
            break
        if trained_at is None and trainer.poll() is not None:
            trained_at = time.time()
        if trained_at is not None and time.time() - trained_at > grace_secs:
            evaluator.kill()
            killed = True
            break
        time.sleep(0.1)
    evaluator.wait()
    exited_at = time.time()
    trainer.wait()
    trained_at = trained_at or time.time()
    return _summarize(checkpoint_dir, events_path, samples, trained_at, exited_at,
                      bool(killed), trainer.returncode)


def _summarize(checkpoint_dir, events_path, samples, trained_at, exited_at, killed,
               trainer_rc):
    ready = {}  # training step -> time its checkpoint was complete
    for index in glob.glob(os.path.join(checkpoint_dir, "ckpt-*.index")):
        epoch = int(index[:-len(".index")].rsplit("-", 1)[1])
        ready[epoch * STEPS_PER_EPOCH] = os.path.getmtime(index)
    events = []
    if os.path.exists(events_path):
        with open(events_path) as f:
            events = [json.loads(line) for line in f]
    begins = {e["step"]: e["t"] for e in events if e["event"] == "begin"}
    latencies = [begins[s] - ready[s] for s in begins if s in ready]
    ready_times = sorted(ready.values())
    idle_cpu = idle_wall = 0.0
    for end in (e["t"] for e in events if e["event"] == "end"):
        nxt = bisect.bisect_right(ready_times, end)
        if nxt == len(ready_times):
            continue  # after the last checkpoint: waiting for the end, not for work
        start, stop = end + 0.3, ready_times[nxt] - 0.05
        if stop - start > 0.3:
            idle_cpu += _cpu_at(samples, stop) - _cpu_at(samples, start)
            idle_wall += stop - start
    return {
        "checkpoints produced": len(ready),
        "checkpoints evaluated": len([s for s in begins if s in ready]),
        "latency median (s)": statistics.median(latencies) if latencies else None,
        "latency worst (s)": max(latencies) if latencies else None,
        "idle CPU (cpu s / wall s)": idle_cpu / idle_wall if idle_wall else None,
        "idle wall measured (s)": idle_wall,
        "stopped by itself": not killed,
        "exit after last checkpoint (s)": exited_at - max(ready_times, default=exited_at),
        "exit after trainer exit (s)": exited_at - trained_at,
        "trainer exit code": trainer_rc,
    }


def _cpu_at(samples, t):
    times = [s[0] for s in samples]
    i = bisect.bisect_left(times, t)
    if i <= 0:
        return samples[0][1]
    if i >= len(samples):
        return samples[-1][1]
    (t0, c0), (t1, c1) = samples[i - 1], samples[i]
    return c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def main(argv):
    if argv and argv[0] == "trainer":
        return run_trainer(argv[1], int(argv[2]), float(argv[3]))
    if argv and argv[0] == "evaluator":
        return run_evaluator(argv[1], argv[2], int(argv[3]), argv[4])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--sleep", type=float, default=2.5, help="seconds per epoch")
    parser.add_argument("--grace", type=float, default=30.0,
                        help="kill an evaluator still running this long after training")
    args = parser.parse_args(argv)
    results = {}
    for kind, label in (("keras", "tf.keras.utils.SidecarEvaluator"),
                        ("trainexec", "trainexec SidecarEvaluator")):
        print(f"running {label} ...", flush=True)
        results[label] = measure(kind, args.epochs, args.sleep, args.grace)
    labels = list(results)
    print()
    print(f"{'':32}" + "".join(f"{label:>34}" for label in labels))
    for row in results[labels[0]]:
        cells = "".join(f"{_fmt(results[label][row]):>34}" for label in labels)
        print(f"{row:32}{cells}")


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


if __name__ == "__main__":
    main(sys.argv[1:])
