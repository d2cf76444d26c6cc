"""Writes a `.weights.h5` checkpoint of the toy model the way HDF5 does, in place,
but holds the file open for HOLD_SECS before closing it, then records when it
closed it in `<path>.closed_at` and a completion record naming it.

Usage: slow_h5_writer.py CHECKPOINT_DIR HOLD_SECS
"""

import os
import sys
import tempfile
import time

import h5py

import toy
from trainexec.records.completion import record_training_complete


def main(checkpoint_dir, hold_secs):
    model = toy.build_model()
    model.evaluate(toy.dataset(), verbose=0)  # build the metrics, as training does
    toy.set_quality(model, 0.8)
    model.optimizer.iterations.assign(8)
    with tempfile.TemporaryDirectory() as tmp:
        whole = os.path.join(tmp, "whole.weights.h5")
        model.save_weights(whole)
        path = os.path.join(checkpoint_dir, "ckpt-1.weights.h5")
        with h5py.File(whole, "r") as source, h5py.File(path, "w") as target:
            for name in source:
                source.copy(source[name], target, name)
            target.flush()
            print("written, holding it open", flush=True)
            time.sleep(hold_secs)
        closed_at = time.time()
    with open(path + ".closed_at", "w") as f:
        f.write(repr(closed_at))
    record_training_complete(checkpoint_dir, path, 8, None)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
