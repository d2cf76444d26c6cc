"""Idle evaluator: CPU while waiting for a checkpoint, and exit once training ends.

Runs the same Estimator program (`trainexec.examples.estimator_job`) as the
evaluator task twice, once through `tf.estimator.train_and_evaluate` and once
through `trainexec.train_and_evaluate`, with `throttle_secs=0` and
`max_steps=None`, against a model directory whose run has one checkpoint:

1. idle phase: no new checkpoint arrives; the evaluator's CPU use is sampled
   with psutil (CPU seconds / wall seconds, 1.0 = one full core);
2. end phase: the run finishes (trainexec's completion record is written, as
   trainexec's chief does); we time how long the evaluator takes to exit.

    python benchmarks/evaluator_idle.py [--idle-secs 20] [--exit-timeout 60]
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
import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _job(model_dir: str, api: str, env: dict, max_steps: int) -> list[str]:
    return [sys.executable, "-m", "trainexec.examples.estimator_job", "--model-dir",
            model_dir, "--api", api, "--max-steps", str(max_steps),
            "--throttle-secs", "0", "--start-delay-secs", "0"]


def prepare_run(model_dir: str) -> str:
    """Trains 20 steps locally, then forgets that training ended."""
    env = dict(os.environ)
    env.pop("TF_CONFIG", None)
    subprocess.run(_job(model_dir, "trainexec", env, 20), env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from trainexec.records.completion import clear_training_complete
    clear_training_complete(model_dir)
    return model_dir


def measure(api: str, model_dir: str, idle_secs: float, exit_timeout: float) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_CONFIG=json.dumps({
        "cluster": {"chief": [f"127.0.0.1:{portpicker.pick_unused_port()}"]},
        "task": {"type": "evaluator", "index": 0}}))
    log = open(os.path.join(model_dir, f"evaluator-{api}.log"), "w")
    proc = subprocess.Popen(_job(model_dir, api, env, 0), env=env, stdout=log,
                            stderr=subprocess.STDOUT, cwd=ROOT)
    ps = psutil.Process(proc.pid)
    try:
        warmup_deadline = time.monotonic() + 60
        eval_dir = os.path.join(model_dir, "eval")
        while not os.path.isdir(eval_dir) and time.monotonic() < warmup_deadline:
            time.sleep(0.5)
        time.sleep(5)  # let the first evaluation finish
        cpu0, t0 = sum(ps.cpu_times()[:2]), time.monotonic()
        time.sleep(idle_secs)
        cpu1, t1 = sum(ps.cpu_times()[:2]), time.monotonic()
        from trainexec.records.completion import record_training_complete
        import tensorflow as tf
        latest = tf.train.latest_checkpoint(model_dir)
        record_training_complete(model_dir, latest, int(latest.rsplit("-", 1)[1]), None)
        ended = time.monotonic()
        try:
            proc.wait(timeout=exit_timeout)
            exit_secs = time.monotonic() - ended
        except subprocess.TimeoutExpired:
            exit_secs = None
        return {"idle_cpu": (cpu1 - cpu0) / (t1 - t0), "exit_secs": exit_secs}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-secs", type=float, default=20)
    parser.add_argument("--exit-timeout", type=float, default=60)
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for api in ("tf", "trainexec"):
            model_dir = prepare_run(os.path.join(tmp, api))
            rows[api] = measure(api, model_dir, args.idle_secs, args.exit_timeout)
    print(f"\nEvaluator task, throttle_secs=0, max_steps=None, "
          f"{args.idle_secs:.0f}s without a new checkpoint")
    print(f"{'':34}{'tf.estimator':>16}{'trainexec':>16}")
    fmt_cpu = lambda r: f"{100 * r['idle_cpu']:.1f}% core"
    fmt_exit = lambda r: (f"{r['exit_secs']:.1f}s" if r["exit_secs"] is not None
                          else f">{args.exit_timeout:.0f}s (never)")
    print(f"{'CPU while idle':34}{fmt_cpu(rows['tf']):>16}{fmt_cpu(rows['trainexec']):>16}")
    print(f"{'exit after training finished':34}{fmt_exit(rows['tf']):>16}"
          f"{fmt_exit(rows['trainexec']):>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
