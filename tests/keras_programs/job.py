"""One KerasTrainer job; every task of a cluster runs this program (only TF_CONFIG
differs). The evaluator (or a local run) writes `(metrics, exports)` to
--result-file as JSON.

--crash-at-step N makes the chief die (SIGKILL, as an out-of-memory kill would: no
clean-up, and retryable under the exit-code contract, where a plain exit 3 is
permanent) at the end of the epoch that reaches step N, before that epoch's
checkpoint is saved, the first time only (a marker file in --model-dir remembers
it), so that a launcher that restarts it shows the restart resuming at the save
before.

Usage: job.py --model-dir DIR --max-steps N [--save-steps S] [--model dense|custom]
              [--input per-replica|global] [--result-file F] [--crash-at-step N]
              [--log-step-count-steps N]
"""

import argparse
import json
import os
import signal
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras_toy  # noqa: E402
from trainexec.cluster.config import ClusterConfig  # noqa: E402
from trainexec.keras.evaluate.exporters import FinalExporter  # noqa: E402
import trainexec  # noqa: E402
from trainexec.keras.trainer import KerasTrainer  # noqa: E402
from trainexec.specs import EvalSpec, TrainSpec  # noqa: E402

CRASH_MARKER = "crashed-once"


class CrashOnce(tf.keras.callbacks.Callback):
    def __init__(self, step, marker):
        super().__init__()
        self.step = step
        self.marker = marker

    def on_epoch_end(self, epoch, logs=None):  # before that epoch's save (and PSS has
        # no batch-level callbacks)
        if (int(self.model.optimizer.iterations.numpy()) >= self.step
                and not os.path.exists(self.marker)):
            open(self.marker, "w").close()
            print(f"job.py: crashing at step {self.step} as asked", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--max-steps", type=int, required=True)
    parser.add_argument("--save-steps", type=int, default=20)
    parser.add_argument("--model", choices=sorted(keras_toy.BUILDERS), default="dense")
    parser.add_argument("--input", choices=["per-replica", "global"], default="per-replica")
    parser.add_argument("--result-file")
    parser.add_argument("--crash-at-step", type=int)
    parser.add_argument("--log-step-count-steps", type=int, default=100)
    args = parser.parse_args()

    cluster = ClusterConfig.from_env()
    callbacks = []
    if args.crash_at_step and cluster.is_chief:
        callbacks.append(CrashOnce(args.crash_at_step,
                                   os.path.join(args.model_dir, CRASH_MARKER)))
    trainer = KerasTrainer(keras_toy.BUILDERS[args.model], model_dir=args.model_dir,
                           save_checkpoints_steps=args.save_steps, callbacks=callbacks,
                           log_step_count_steps=args.log_step_count_steps)
    input_fn = (keras_toy.train_input_fn if args.input == "per-replica"
                else keras_toy.train_input_fn_global)
    # The user's contract: one call, every role (the options only speed the test up).
    result = trainexec.train_and_evaluate(
        trainer, TrainSpec(input_fn, max_steps=args.max_steps),
        EvalSpec(keras_toy.eval_dataset, steps=None, start_delay_secs=0, throttle_secs=0,
                 exporters=[FinalExporter()]),
        poll_secs=0.5, evaluator_idle_timeout_secs=120)
    if result is not None and args.result_file:  # the evaluator, or a local run
        with open(args.result_file, "w") as f:
            json.dump({"metrics": result.metrics, "exports": result.exports}, f)


if __name__ == "__main__":
    main()
