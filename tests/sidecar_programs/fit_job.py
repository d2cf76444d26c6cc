"""Trains the toy model with `model.fit`, a checkpoint per epoch and a completion
record at the end, sleeping a little per epoch so an evaluator can follow. At
the end it writes its own `model.evaluate` metrics on the evaluation data to
`<checkpoint_dir>/trainer_metrics.json`.

Usage: fit_job.py CHECKPOINT_DIR EPOCHS SLEEP_SECS [weights.h5|keras]
"""

import json
import os
import sys
import time

import tensorflow as tf

import toy
from trainexec.keras.fit.callbacks import TrainingCompleteCallback


def main(checkpoint_dir, epochs, sleep_secs, file_format="weights.h5"):
    model = toy.build_model()
    pause = tf.keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: time.sleep(sleep_secs))
    model.fit(toy.dataset(batch=32).repeat(), steps_per_epoch=8, epochs=epochs, verbose=0,
              callbacks=[pause,
                         tf.keras.callbacks.ModelCheckpoint(
                             os.path.join(checkpoint_dir, "ckpt-{epoch}." + file_format),
                             save_weights_only=file_format == "weights.h5"),
                         TrainingCompleteCallback(checkpoint_dir)])
    toy.write_metrics(model, checkpoint_dir)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), *sys.argv[4:])
