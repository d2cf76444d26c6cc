"""Trains the toy model with `model.fit`, a checkpoint per epoch and a completion
record at the end, sleeping a little per epoch so an evaluator can follow.

Usage: fit_job.py CHECKPOINT_DIR EPOCHS SLEEP_SECS
"""

import os
import sys
import time

import tensorflow as tf

import toy
from trainexec.sidecar import TrainingCompleteCallback


def main(checkpoint_dir, epochs, sleep_secs):
    model = toy.build_model()
    pause = tf.keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: time.sleep(sleep_secs))
    model.fit(toy.dataset(batch=32).repeat(), steps_per_epoch=8, epochs=epochs, verbose=0,
              callbacks=[pause,
                         tf.keras.callbacks.ModelCheckpoint(
                             os.path.join(checkpoint_dir, "ckpt-{epoch}"),
                             save_weights_only=True),
                         TrainingCompleteCallback(checkpoint_dir)])


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
