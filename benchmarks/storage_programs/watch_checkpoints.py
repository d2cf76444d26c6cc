"""The evaluator side of benchmarks/storage_pickup.py: when is each checkpoint picked up?

`--reader trainexec`: trainexec's continuous evaluation loop (the engine of the
evaluator task and of `SidecarEvaluator`), `throttle_secs=0`, its default 1 s poll,
with a target whose "evaluation" only notes the time: pickup = the loop starting to
evaluate a checkpoint. It also counts the file-system calls trainexec makes (through
`tf.io.gfile` and `os`) per poll while it idles after the last checkpoint, before the
completion record comes; on gs:// each such call is at least one request.
`--reader tf`: the reference, `tf.train.checkpoints_iterator` (what
tf.estimator's and Keras' evaluators wait with: a look every second).

    python watch_checkpoints.py --dir /shared/run --count 20 --reader trainexec --out seen.json
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import time


class _Counter:
    """Counts calls of the patched file-system functions, by name."""

    def __init__(self) -> None:
        self.calls: collections.Counter = collections.Counter()
        self.on = True

    def wrap(self, owner, name: str) -> None:
        real = getattr(owner, name)

        @functools.wraps(real)
        def counted(*args, **kwargs):
            if self.on:
                self.calls[name] += 1
            return real(*args, **kwargs)
        setattr(owner, name, counted)


def _trainexec(args, seen: list, idle: dict) -> None:
    from trainexec.records import checkpoints
    from trainexec.clock import SystemClock
    from trainexec.evaluation.loop import ContinuousEvaluation
    from trainexec.evaluation.one_pass import Evaluator
    from trainexec.evaluation.policy import LoopPolicy
    from trainexec.evaluation.watch import waiter_for
    from trainexec.records.storage import storage_of

    # Counted where every TensorFlow file-system call goes through (tf.io.gfile and
    # TensorFlow's own checkpoint lookups alike), and os for local paths.
    from tensorflow.python.lib.io import _pywrap_file_io

    counter = _Counter()
    for name in ("FileExists", "Stat", "GetChildren", "GetMatchingFiles", "IsDirectory",
                 "ReadFileToString", "BufferedInputStream", "CreateDir",
                 "RecursivelyCreateDir", "DeleteFile", "RenameFile", "WritableFile"):
        counter.wrap(_pywrap_file_io, name)
    for name in ("stat", "listdir", "scandir"):
        counter.wrap(os, name)
    counter.on = False

    class Target:
        model_dir = args.dir
        export_subject = None

        def latest_checkpoint(self):
            info = checkpoints.latest_checkpoint(args.dir)
            return info.path if info else None

        def evaluate(self, checkpoint_path):
            seen.append({"checkpoint": checkpoint_path, "picked_at": time.time()})
            step = checkpoints.checkpoint_step(checkpoint_path) or 0
            if step >= args.count * 100:  # the writer's last: it idles before its record
                counter.calls.clear()
                counter.on = True  # idle from here until the completion record
            return {"global_step": step}

    inner = waiter_for(args.dir, SystemClock(), 1.0)

    class CountingWaiter:
        polls = 0

        def wait(self, secs):
            if counter.on:
                CountingWaiter.polls += 1
            inner.wait(secs)

        def close(self):
            inner.close()

    target = Target()
    policy = LoopPolicy.for_storage(storage_of(args.dir), poll_secs=1.0,
                                    stale_record_grace_secs=0)
    loop = ContinuousEvaluation(Evaluator(target), target, policy,
                                waiter=CountingWaiter())
    loop.run()
    counter.on = False
    idle.update(polls=CountingWaiter.polls, calls=dict(counter.calls))


def _reference(args, seen: list) -> None:
    import tensorflow as tf

    from trainexec.records import checkpoints

    for path in tf.train.checkpoints_iterator(args.dir, min_interval_secs=0,
                                              timeout=args.timeout):
        seen.append({"checkpoint": path, "picked_at": time.time()})
        if (checkpoints.checkpoint_step(path) or 0) >= args.count * 100:
            return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--reader", choices=("trainexec", "tf"), required=True)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    seen: list = []
    idle: dict = {}
    if args.reader == "trainexec":
        _trainexec(args, seen, idle)
    else:
        _reference(args, seen)
    with open(args.out, "w") as f:
        json.dump({"seen": seen, "idle": idle}, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
