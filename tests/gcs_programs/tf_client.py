"""TensorFlow's own gs:// file system against the GCS emulator, from a client host.

Usage: tf_client.py gs://BUCKET/PREFIX

Runs every scenario under PREFIX and prints one JSON line: {scenario: "ok" or the
error}. Each scenario checks what it expects with assert; one failing does not stop
the others. Needs the emulator's client_env() and hosts line.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

gfile = tf.io.gfile
BASE = sys.argv[1].rstrip("/")


def write(path: str, data: bytes) -> None:
    with gfile.GFile(path, "wb") as f:
        f.write(data)


def read(path: str) -> bytes:
    with gfile.GFile(path, "rb") as f:
        return f.read()


def files() -> None:
    d = f"{BASE}/files"
    before = time.time_ns()
    write(f"{d}/a.txt", b"hello gcs")
    after = time.time_ns()
    assert read(f"{d}/a.txt") == b"hello gcs"
    stat = gfile.stat(f"{d}/a.txt")
    assert stat.length == 9 and not stat.is_directory, stat
    # GCS times have milliseconds; the emulator's clock is this machine's.
    assert before - 1_000_000 <= stat.mtime_nsec <= after, (before, stat.mtime_nsec, after)
    assert gfile.exists(f"{d}/a.txt") and not gfile.exists(f"{d}/missing")
    write(f"{d}/b.bin", bytes(range(256)) * 4000)  # ~1 MB, several reads
    assert read(f"{d}/b.bin") == bytes(range(256)) * 4000
    write(f"{d}/empty", b"")
    assert read(f"{d}/empty") == b"" and gfile.stat(f"{d}/empty").length == 0
    write(f"{d}/sub/c.txt", b"c")
    assert sorted(gfile.listdir(d)) == ["a.txt", "b.bin", "empty", "sub/"], gfile.listdir(d)
    assert sorted(gfile.glob(f"{d}/*.txt")) == [f"{d}/a.txt"], gfile.glob(f"{d}/*.txt")
    assert gfile.glob(f"{d}/sub/*") == [f"{d}/sub/c.txt"]
    assert gfile.isdir(f"{d}/sub") and not gfile.isdir(f"{d}/a.txt")
    write(f"{d}/a.txt", b"second version")  # overwrite
    assert read(f"{d}/a.txt") == b"second version"
    with gfile.GFile(f"{d}/a.txt", "ab") as f:  # append: read, then upload again
        f.write(b"+")
    assert read(f"{d}/a.txt") == b"second version+"
    gfile.remove(f"{d}/empty")
    assert not gfile.exists(f"{d}/empty")
    try:
        gfile.remove(f"{d}/empty")
        raise AssertionError("removing a missing object succeeded")
    except tf.errors.NotFoundError:
        pass


def dirs() -> None:
    d = f"{BASE}/dirs"
    gfile.makedirs(f"{d}/made/x/y")
    assert gfile.isdir(f"{d}/made/x/y") and gfile.isdir(f"{d}/made")
    assert gfile.listdir(f"{d}/made/x") == ["y/"], gfile.listdir(f"{d}/made/x")
    gfile.makedirs(f"{d}/made/x/y")  # exists already: no error
    # Rename one file, without and with overwrite.
    write(f"{d}/one", b"1")
    gfile.rename(f"{d}/one", f"{d}/two")
    assert not gfile.exists(f"{d}/one") and read(f"{d}/two") == b"1"
    write(f"{d}/three", b"3")
    try:
        gfile.rename(f"{d}/three", f"{d}/two", overwrite=False)
        raise AssertionError("rename onto an existing object without overwrite succeeded")
    except tf.errors.AlreadyExistsError:
        pass
    gfile.rename(f"{d}/three", f"{d}/two", overwrite=True)
    assert read(f"{d}/two") == b"3" and not gfile.exists(f"{d}/three")
    # Rename a directory of several objects (and a marker): object by object.
    src, dst = f"{d}/src", f"{d}/dst"
    gfile.makedirs(src)
    for name in ("p", "q", "deep/r", "deep/er/s"):
        write(f"{src}/{name}", name.encode())
    gfile.rename(src, dst)
    assert not gfile.exists(src), gfile.listdir(d)
    got = sorted(os.path.relpath(os.path.join(root, f), dst)
                 for root, _, fs in gfile.walk(dst) for f in fs)
    assert got == ["deep/er/s", "deep/r", "p", "q"], got
    assert read(f"{dst}/deep/er/s") == b"deep/er/s"
    gfile.rmtree(dst)
    assert not gfile.exists(dst) and not gfile.glob(f"{dst}/*")
    gfile.rmtree(f"{d}/made")
    assert sorted(gfile.listdir(d)) == ["two"], gfile.listdir(d)


def checkpoint() -> None:
    d = f"{BASE}/ckpt"
    v = tf.Variable([1.0, 2.0, 3.0])
    step = tf.Variable(0, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(v=v, step=step)
    manager = tf.train.CheckpointManager(ckpt, d, max_to_keep=2)
    for i in range(3):
        step.assign(i)
        v.assign_add([1.0, 1.0, 1.0])
        manager.save(checkpoint_number=i)
    latest = tf.train.latest_checkpoint(d)
    assert latest == f"{d}/ckpt-2", latest
    # max_to_keep=2 deleted ckpt-0's files
    assert not gfile.glob(f"{d}/ckpt-0*"), gfile.glob(f"{d}/ckpt-0*")
    v2, step2 = tf.Variable([0.0, 0.0, 0.0]), tf.Variable(0, dtype=tf.int64)
    tf.train.Checkpoint(v=v2, step=step2).restore(latest).assert_consumed()
    assert v2.numpy().tolist() == [4.0, 5.0, 6.0] and int(step2.numpy()) == 2
    path = tf.train.Checkpoint(v=v).save(f"{d}/plain/save")  # Checkpoint.save as well
    assert tf.train.latest_checkpoint(f"{d}/plain") == path, path


def saved_model() -> None:
    d = f"{BASE}/saved_model"

    class Scale(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(3.0)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return x * self.w

    tf.saved_model.save(Scale(), d)
    assert gfile.exists(f"{d}/saved_model.pb")
    assert gfile.glob(f"{d}/variables/variables.index")
    loaded = tf.saved_model.load(d)
    assert loaded(tf.constant([1.0, 2.0])).numpy().tolist() == [3.0, 6.0]


def mtime_is_updated() -> None:
    """The mtime TensorFlow reports is the emulator's `updated`, as
    google-cloud-storage reads it (when that client is installed)."""
    path = f"{BASE}/mtime/object"
    write(path, b"x")
    stat = gfile.stat(path)
    try:
        from google.cloud import storage
    except ImportError:
        return
    bucket, name = path[len("gs://"):].split("/", 1)
    blob = storage.Client().bucket(bucket).blob(name)
    blob.reload()
    updated_ns = int(blob.updated.timestamp() * 1000) * 1_000_000
    assert abs(stat.mtime_nsec - updated_ns) < 10_000, (stat.mtime_nsec, updated_ns, blob.updated)
    assert blob.size == 1 and blob.metageneration == 1


SCENARIOS = [files, dirs, checkpoint, saved_model, mtime_is_updated]

if __name__ == "__main__":
    only = set(sys.argv[2:])
    report = {"tensorflow": tf.__version__}
    for scenario in SCENARIOS:
        if only and scenario.__name__ not in only:
            continue
        started = time.monotonic()
        try:
            scenario()
            report[scenario.__name__] = "ok"
        except BaseException:  # noqa: BLE001 - reported, the next scenario runs
            report[scenario.__name__] = traceback.format_exc()
        report[scenario.__name__ + "_seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(report), flush=True)
