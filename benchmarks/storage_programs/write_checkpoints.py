"""The trainer side of benchmarks/storage_pickup.py: writes checkpoints as TensorFlow does.

Saves `--count` checkpoints of a small model with `tf.train.CheckpointManager` into
`--dir` (files renamed into place, the `checkpoint` state file last), one every 1-2 s
(seeded), and records when each save returned (wall clock: the hosts of a test bed
share the machine's clock). After the last one it waits `--idle-secs` (the evaluator
idles: its polls are counted), then writes trainexec's completion record.

    python write_checkpoints.py --dir /shared/run --count 20 --out times.json
"""

from __future__ import annotations

import argparse
import json
import random
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--idle-secs", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import tensorflow as tf

    from trainexec.records.completion import record_training_complete

    rng = random.Random(args.seed)
    step = tf.Variable(0, dtype=tf.int64)
    weights = tf.Variable(tf.zeros([256, 64]))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step, weights=weights),
                                         args.dir, max_to_keep=None)
    saved = []
    for i in range(1, args.count + 1):
        time.sleep(rng.uniform(1.0, 2.0))
        step.assign(i * 100)
        weights.assign_add(tf.ones([256, 64]))
        path = manager.save(checkpoint_number=i * 100)
        saved.append({"checkpoint": path, "saved_at": time.time()})
    time.sleep(args.idle_secs)
    record_training_complete(args.dir, saved[-1]["checkpoint"], args.count * 100,
                             args.count * 100)
    with open(args.out, "w") as f:
        json.dump(saved, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
