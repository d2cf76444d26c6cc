"""TensorFlow's GCS stat cache against trainexec's reads (tests/cluster/test_testing_gcs.py).

  stat_cache.py write GS_DIR VERSION [CONTROL_DIR]
      writes GS_DIR's checkpoint state file and a completion record, version 1 short,
      version 2 longer (two more checkpoints named), each replaced whole; with
      CONTROL_DIR, TensorFlow loaded, it first waits for CONTROL_DIR/cached and then
      says CONTROL_DIR/rewritten (so the rewrite lands within a second of the read
      it follows, however loaded the machine)
  stat_cache.py read GS_DIR CONTROL_DIR
      reads both once (TensorFlow caches their sizes), says so in CONTROL_DIR/cached,
      waits for CONTROL_DIR/rewritten, reads them again at once and prints JSON: what
      tf.train.get_checkpoint_state, GFile.read(), trainexec's latest_checkpoint and
      read_training_complete saw
"""

from __future__ import annotations

import json
import os
import sys
import time


def write(gs_dir: str, version: int, control: str | None = None) -> None:
    import tensorflow as tf

    from trainexec.records.completion import record_training_complete

    if control is not None:
        tf.io.gfile.exists(gs_dir)  # the client made before the wait
        while not os.path.exists(os.path.join(control, "cached")):
            time.sleep(0.02)

    steps = [100] if version == 1 else [100, 200, 300]
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    for step in steps:  # real checkpoints, so that the state names files that exist
        ckpt.write(f"{gs_dir}/ckpt-{step}")
    state = f'model_checkpoint_path: "ckpt-{steps[-1]}"\n' + "".join(
        f'all_model_checkpoint_paths: "ckpt-{s}"\n' for s in steps)
    with tf.io.gfile.GFile(f"{gs_dir}/checkpoint.tmp", "w") as f:
        f.write(state)
    tf.io.gfile.rename(f"{gs_dir}/checkpoint.tmp", f"{gs_dir}/checkpoint", overwrite=True)
    record_training_complete(gs_dir, f"{gs_dir}/ckpt-{steps[-1]}", steps[-1],
                             None if version == 1 else 300)
    if control is not None:
        open(os.path.join(control, "rewritten"), "w").close()


def read(gs_dir: str, control: str) -> None:
    import tensorflow as tf

    from trainexec.records.checkpoints import latest_checkpoint, read_checkpoint_state
    from trainexec.records.completion import read_training_complete

    def plain(path):
        with tf.io.gfile.GFile(path, "r") as f:
            return f.read()

    before = {"state": plain(f"{gs_dir}/checkpoint"),
              "record": plain(f"{gs_dir}/trainexec/training_complete.json")}
    open(os.path.join(control, "cached"), "w").close()
    while not os.path.exists(os.path.join(control, "rewritten")):
        time.sleep(0.05)
    state = tf.train.get_checkpoint_state(gs_dir)
    plain_state = plain(f"{gs_dir}/checkpoint")
    latest = latest_checkpoint(gs_dir)
    record = read_training_complete(gs_dir)
    print(json.dumps({
        "before": before,
        "tf_kept": len(state.all_model_checkpoint_paths) if state else None,
        "kept": len(read_checkpoint_state(gs_dir).kept),
        "gfile_read": plain_state,
        "latest": latest.path if latest else None,
        "record_step": record.global_step if record else None,
        "record_max_steps": record.max_steps if record else None}))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]), *sys.argv[4:5])
    else:
        read(sys.argv[2], sys.argv[3])
