"""Writes Keras `.weights.h5` checkpoints of the toy model in place, a chunk at a time,
as a slow writer on another host does: a reader can open each file while it is still
short. Then records the run complete, naming the last.

Usage: chunked_h5_writer.py CHECKPOINT_DIR CHUNK_SECS QUALITY [QUALITY ...]
Checkpoint N (1, 2, ...) has the quality given N-th, at step N * 8.
"""

import os
import sys
import tempfile
import time

import toy
from trainexec.records.completion import record_training_complete

CHUNKS = 8


def main(checkpoint_dir, chunk_secs, qualities):
    model = toy.build_model()
    model.evaluate(toy.dataset(), verbose=0)  # build the metrics, as training does
    path = None
    for number, quality in enumerate(qualities, start=1):
        toy.set_quality(model, quality)
        model.optimizer.iterations.assign(number * 8)
        with tempfile.TemporaryDirectory() as tmp:
            whole = os.path.join(tmp, "whole.weights.h5")
            model.save_weights(whole)
            data = open(whole, "rb").read()
        path = os.path.join(checkpoint_dir, f"ckpt-{number}.weights.h5")
        size = -(-len(data) // CHUNKS)
        with open(path, "wb") as f:
            for start in range(0, len(data), size):
                f.write(data[start:start + size])
                f.flush()
                os.fsync(f.fileno())
                time.sleep(chunk_secs)
        print(f"wrote {path} ({len(data)} bytes)", flush=True)
    record_training_complete(checkpoint_dir, path, len(qualities) * 8, None)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), [float(q) for q in sys.argv[3:]])
