"""The same model on the same global batches, trained two ways, for
tests/cluster/test_keras_3_loop.py:

* with TF_CONFIG (a MultiWorkerMirroredStrategy task): a KerasTrainer job, which on
  Keras 3 trains with trainexec's loop (`trainexec.keras.fit.distributed_fit`); a callback
  records each epoch's logs, and the weights when training ends;
* without: Keras's own `model.fit` in one process.

Each writes {"losses": [per-epoch loss], "weights": [...]} to --out (a path with {task},
replaced by the task's name). The input pipelines shard whole per-replica batches, so
that the global batch of step k is the same elements in both runs.

--bad-train-step trains a model whose train_step reduces across replicas, which cannot
run in a replica context: the job prints the ConfigError (and the type of the error
it was raised from) and exits 2; with a ps in TF_CONFIG, under ParameterServerStrategy.

Usage: loop_curve.py --model-dir DIR --out FILE [--bad-train-step]
"""

import argparse
import json
import sys

import numpy as np
import tensorflow as tf

from trainexec.cluster.config import ClusterConfig
from trainexec.errors import ConfigError
from trainexec.examples.blobs import CLASSES, FEATURES, make_data
from trainexec.executor import TrainingExecutor
from trainexec.keras.trainer import KerasTrainer
from trainexec.specs import TrainSpec

GLOBAL_BATCH = 48
EXAMPLES = 1920  # 40 global batches
STEPS_PER_EPOCH = 10
EPOCHS = 8


def input_fn(input_context):
    """Whole per-replica batches, sharded: pipeline i of n takes batches i, i+n, ..."""
    x, y = make_data(EXAMPLES, seed=1)
    batch = input_context.get_per_replica_batch_size(GLOBAL_BATCH)
    return (tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
            .shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
            .repeat())


class ReducesInTrainStep(tf.keras.Sequential):
    """A train_step that only runs in a cross-replica context."""

    def train_step(self, data):
        logs = super().train_step(data)
        tf.distribute.get_strategy().reduce("SUM", logs["loss"], axis=None)
        return logs


def build_model(model_class=tf.keras.Sequential):
    """Adam on a decaying learning rate, an L2-regularized layer: what `fit` does
    with them, the loop must do too."""
    init = tf.keras.initializers.GlorotUniform
    model = model_class([
        tf.keras.layers.Input((FEATURES,)),
        tf.keras.layers.Dense(16, activation="relu", kernel_initializer=init(seed=1),
                              kernel_regularizer=tf.keras.regularizers.L2(1e-3)),
        tf.keras.layers.Dense(CLASSES, kernel_initializer=init(seed=2)),
    ])
    schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.02, 20, 0.7)
    model.compile(optimizer=tf.keras.optimizers.Adam(schedule),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


class Record(tf.keras.callbacks.Callback):
    """Each epoch's loss, and the weights when training ends."""

    def __init__(self):
        super().__init__()
        self.losses = []
        self.weights = []

    def on_epoch_end(self, epoch, logs=None):
        self.losses.append(float(logs["loss"]))

    def on_train_end(self, logs=None):
        self.weights = [w.tolist() for w in self.model.get_weights()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--bad-train-step", action="store_true")
    args = parser.parse_args()
    cluster = ClusterConfig.from_env()
    record = Record()
    if cluster.task_type is None:  # Keras's own fit, in one process
        model = build_model()
        model.fit(input_fn(tf.distribute.InputContext()), steps_per_epoch=STEPS_PER_EPOCH,
                  epochs=EPOCHS, callbacks=[record], verbose=0)
    else:
        model_class = ReducesInTrainStep if args.bad_train_step else tf.keras.Sequential
        trainer = KerasTrainer(lambda: build_model(model_class), model_dir=args.model_dir,
                               save_checkpoints_steps=STEPS_PER_EPOCH, callbacks=[record])
        try:
            TrainingExecutor(trainer, TrainSpec(input_fn, max_steps=STEPS_PER_EPOCH * EPOCHS),
                             None, cluster=cluster).run()
        except ConfigError as err:
            cause = type(err.__cause__).__name__ if err.__cause__ else "nothing"
            print(f"loop_curve.py: {err} [raised from {cause}]", flush=True)
            return 2
    out = args.out.replace("{task}", (cluster.task_name or "local").replace(":", "-"))
    with open(out, "w") as f:
        json.dump({"losses": record.losses, "weights": record.weights}, f)
    print("loop_curve.py: final loss", record.losses[-1], np.shape(record.losses), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
