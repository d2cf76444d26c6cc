"""The demo's Keras job: one script for every task of a cluster, or alone.

The whole of the user's side is `build_model`, the input functions and one
`trainexec.train_and_evaluate(trainer, train_spec, eval_spec)` call: trainexec
reads TF_CONFIG, picks the strategy (MultiWorkerMirroredStrategy without ps,
ParameterServerStrategy with ps), starts servers, writes checkpoints and the
completion record, and evaluates on the evaluator. The data (three Gaussian
classes in 4 dimensions, fixed seed) is generated in-process.

It runs on Keras 3 (current TensorFlow: clusters train with trainexec's own
loop, as Keras 3's `model.fit` cannot) and on Keras 2 (tf_keras with
TF_USE_LEGACY_KERAS=1, or TensorFlow 2.15: `model.fit`).

    python -m trainexec.examples.keras_job --model-dir /tmp/blobs --max-steps 300
    trainexec launch --workers 2 --evaluator -- \\
        python -m trainexec.examples.keras_job --model-dir /tmp/blobs
"""

from __future__ import annotations

import sys
import time

import tensorflow as tf

import trainexec
from trainexec.errors import ConfigError
from trainexec.examples.arguments import job_parser
from trainexec.examples.blobs import CLASSES, FEATURES, make_data
from trainexec.examples.report import report_result
from trainexec.keras.evaluate.exporters import FinalExporter

__all__ = ["build_model", "eval_input_fn", "main", "train_input_fn"]

GLOBAL_BATCH = 48  # divisible by 1, 2, 3, 4 and 6 replicas


def build_model(steps_per_execution: int = 1) -> tf.keras.Model:
    """A small compiled classifier; trainexec calls this in its strategy's scope.
    (`steps_per_execution`: for benchmarks/keras3_loop.py.)"""
    model = tf.keras.Sequential([
        tf.keras.layers.Input((FEATURES,)),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(CLASSES),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], steps_per_execution=steps_per_execution)
    return model


def train_input_fn(input_context: tf.distribute.InputContext) -> tf.data.Dataset:
    """This input pipeline's shard of the training data, in per-replica batches."""
    x, y = make_data(2000, seed=1)
    data = tf.data.Dataset.from_tensor_slices((x, y))
    data = data.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    batch = input_context.get_per_replica_batch_size(GLOBAL_BATCH)
    return data.shuffle(2000, seed=0).repeat().batch(batch)


def eval_input_fn() -> tf.data.Dataset:
    x, y = make_data(500, seed=2)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(100)


def main(argv: list[str] | None = None) -> int:
    parser = job_parser(__doc__, throttle_secs=0)
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        trainer = trainexec.KerasTrainer(build_model, model_dir=args.model_dir,
                                         save_checkpoints_steps=args.save_checkpoints_steps)
        result = trainexec.train_and_evaluate(
            trainer, trainexec.TrainSpec(train_input_fn, max_steps=args.max_steps),
            trainexec.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0,
                               throttle_secs=args.throttle_secs,
                               exporters=[FinalExporter("final")]))
    except ConfigError as err:  # a malformed TF_CONFIG, ...
        print(f"{parser.prog}: {err}", file=sys.stderr)
        return 2
    report_result(result, args.result_file, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
