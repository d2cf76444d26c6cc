"""Trains the toy model in a custom loop, saving model + optimizer with a
`CheckpointManager` per epoch and recording completion at the end, then writing
its own evaluation of the final model (see toy.write_metrics).

Usage: custom_loop_job.py CHECKPOINT_DIR EPOCHS SLEEP_SECS
"""

import sys
import time

import tensorflow as tf

import toy
from trainexec.records.completion import clear_training_complete, record_training_complete


def main(checkpoint_dir, epochs, sleep_secs):
    model = toy.build_model(compiled=False)
    optimizer = tf.keras.optimizers.SGD(0.05)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model, optimizer=optimizer), checkpoint_dir,
        max_to_keep=3)
    clear_training_complete(checkpoint_dir)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables))

    for _ in range(epochs):
        for x, y in toy.dataset(batch=32):
            step(x, y)
        manager.save()
        time.sleep(sleep_secs)
    record_training_complete(checkpoint_dir, manager.latest_checkpoint,
                             int(optimizer.iterations.numpy()), None)
    model.compile(loss="mse", metrics=["mae"])  # only to evaluate, as the evaluator does
    toy.write_metrics(model, checkpoint_dir)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
