"""trainexec/contract/storage_faults.py: a storage error told from the rest, by its errno,
its HTTP status or TensorFlow's words for them; transient or permanent; the path, the
operation and what to do. The messages are the ones TensorFlow's local and GCS file
systems write (errno folded in as `; <strerror>`, the HTTP status as `HTTP response
code N`)."""

from __future__ import annotations

import errno
import threading

import pytest
import tensorflow as tf

from trainexec.contract.storage_faults import FAILED, UNAVAILABLE, storage_fault

pytestmark = pytest.mark.tf_line

GS_503 = ("Error executing an HTTP request: HTTP response code 503 with body 'Service "
          "Unavailable' when initiating an upload to gs://b/model/ckpt-300.index")
SHARD_GONE_ON_GS = (
    "Graph execution error: allow_missing_files was set to false and "
    "gs://trainexec-test/model/ckpt-200_temp/part-00000-of-00002 did not exist.NOT_FOUND: "
    "The specified path gs://trainexec-test/model/ckpt-200_temp/part-00000-of-00002 was not "
    "found.\n\t [[{{node MergeV2Checkpoints}}]]")


class _ApiCoreLike(Exception):
    """A google.api_core error: an HTTP `code` attribute."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


_ApiCoreLike.__module__ = "google.api_core.exceptions"


class _ClientConnectionError(Exception):
    """requests' ConnectionError, as google-cloud-storage raises it."""


_ClientConnectionError.__name__ = "ConnectionError"
_ClientConnectionError.__module__ = "requests.exceptions"


def _chained(outer, inner):
    try:
        try:
            raise inner
        except BaseException as err:
            raise outer from err
    except BaseException as err:
        return err


@pytest.mark.parametrize("error, kind, reason, path", [
    (tf.errors.ResourceExhaustedError(None, None, "/m/ckpt-300_temp/part-00000-of-00001."
                                      "data-00000-of-00001.tempstate9; No space left on "
                                      "device"),
     FAILED, "No space left on device", "/m/ckpt-300_temp/part-00000-of-00001.data-00000-"
                                        "of-00001.tempstate9"),
    (tf.errors.UnknownError(None, None, "/mnt/nfs/m/checkpoint.tmp1; Disk quota exceeded"),
     FAILED, "Disk quota exceeded", "/mnt/nfs/m/checkpoint.tmp1"),
    (tf.errors.FailedPreconditionError(None, None, "/m/x; Read-only file system"), FAILED,
     "Read-only file system", "/m/x"),
    (tf.errors.PermissionDeniedError(None, None, "Error executing an HTTP request: HTTP "
                                     "response code 403 with body 'Forbidden' when reading "
                                     "metadata of gs://b/m/checkpoint"),
     FAILED, "HTTP 403 (no permission)", "gs://b/m/checkpoint"),
    (tf.errors.NotFoundError(None, None, "The specified bucket does not exist: gs://nob/m"),
     FAILED, "the bucket does not exist", "gs://nob/m"),
    (tf.errors.UnavailableError(None, None, GS_503), UNAVAILABLE, "HTTP 503",
     "gs://b/model/ckpt-300.index"),
    (tf.errors.UnavailableError(None, None, "All 10 retry attempts failed. The last "
                                "failure: Error executing an HTTP request: HTTP response "
                                "code 429 with body '' when reading gs://b/m/x"),
     UNAVAILABLE, "HTTP 429", "gs://b/m/x"),
    (tf.errors.UnavailableError(None, None, "Unexpected response code 410 when resuming "
                                "upload gs://b/m/ckpt-9.data-00000-of-00001"),
     UNAVAILABLE, "HTTP 410", "gs://b/m/ckpt-9.data-00000-of-00001"),
    (tf.errors.UnavailableError(None, None, "Error executing an HTTP request: libcurl code "
                                "7 meaning 'Couldn't connect to server', when reading "
                                "gs://b/m/checkpoint"),
     UNAVAILABLE, "the storage's endpoint did not answer", "gs://b/m/checkpoint"),
    (tf.errors.UnknownError(None, None, "/mnt/nfs/m/ckpt-3.index; Input/output error"),
     UNAVAILABLE, "Input/output error", "/mnt/nfs/m/ckpt-3.index"),
    (OSError(errno.EIO, "Input/output error", "/mnt/nfs/m/trainexec/finished/w-1.json"),
     UNAVAILABLE, "Input/output error", "/mnt/nfs/m/trainexec/finished/w-1.json"),
    (OSError(errno.ESTALE, "Stale file handle", "/mnt/nfs/m/checkpoint"), UNAVAILABLE,
     "Stale file handle", "/mnt/nfs/m/checkpoint"),
    (OSError(errno.ETIMEDOUT, "Connection timed out"), UNAVAILABLE, "Connection timed out",
     None),
    (OSError(errno.ENOSPC, "No space left on device", "/m/x"), FAILED,
     "No space left on device", "/m/x"),
    (_ApiCoreLike(503, "503 GET https://storage.googleapis.com/b/o: Service Unavailable"),
     UNAVAILABLE, "HTTP 503", None),
    (_ApiCoreLike(403, "403 POST .../b/o: Forbidden"), FAILED, "HTTP 403 (no permission)",
     None),
    (_ClientConnectionError("('Connection aborted.', RemoteDisconnected(...))"),
     UNAVAILABLE, "the storage's endpoint did not answer (ConnectionError)", None),
    # Chaos seed 52 (PSS on gs://, 429s): the restarted chief's save of step 200 met the
    # ps still merging the first chief's save of the same step.
    (tf.errors.InvalidArgumentError(None, None, SHARD_GONE_ON_GS), UNAVAILABLE,
     "a shard of the checkpoint being saved was gone before the save merged it",
     "gs://trainexec-test/model/ckpt-200_temp/part-00000-of-00002"),
    (tf.errors.NotFoundError(None, None, "/mnt/nfs/m/ckpt-7_temp/part-00001-of-00002.index; "
                             "No such file or directory"), UNAVAILABLE,
     "a shard of the checkpoint being saved was gone before the save merged it",
     "/mnt/nfs/m/ckpt-7_temp/part-00001-of-00002.index"),
    # Through the chain: Keras and the engine wrap TensorFlow's error in their own.
    (_chained(RuntimeError("saving failed"),
              tf.errors.UnavailableError(None, None, GS_503)), UNAVAILABLE, "HTTP 503",
     "gs://b/model/ckpt-300.index"),
])
def test_storage_errors_are_told_with_their_kind_reason_and_path(error, kind, reason, path):
    fault = storage_fault(error)
    assert fault is not None
    assert (fault.kind, fault.reason, fault.path) == (kind, reason, path)
    assert fault.retryable is (kind == UNAVAILABLE)


@pytest.mark.parametrize("error", [
    tf.errors.UnavailableError(None, None, "Socket closed"),
    tf.errors.UnavailableError(None, None, "failed to connect to all addresses; last error: "
                               "ipv4:198.18.0.12:2222: Connection refused"),
    tf.errors.InternalError(None, None, "/job:worker/replica:0/task:1/device:CPU:0: "
                            "Connection reset by peer"),
    tf.errors.InvalidArgumentError(None, None, "Matrix size-incompatible"),
    FileNotFoundError(errno.ENOENT, "No such file or directory", "/data/train.csv"),
    ValueError("No space left in the batch"),
    _ApiCoreLike(404, "404 No such object: b/o"),
    tf.errors.NotFoundError(None, None, "gs://b/data/train-00003-of-00010 not found"),
])
def test_peers_and_the_programs_own_errors_are_not_storage(error):
    assert storage_fault(error) is None


@pytest.mark.parametrize("error, words", [
    (tf.errors.ResourceExhaustedError(None, None, "/m/ckpt-300_temp/x; No space left on "
                                      "device"),
     ["storage failed: No space left on device (/m/ckpt-300_temp/x)",
      "free space on the file system that holds it", "last whole checkpoint is kept"]),
    (tf.errors.UnavailableError(None, None, GS_503),
     ["storage unavailable: HTTP 503 (gs://b/model/ckpt-300.index)",
      "a restart resumes from the last whole checkpoint"]),
    (tf.errors.PermissionDeniedError(None, None, "HTTP response code 403 ... gs://b/m/x"),
     ["storage failed: HTTP 403", "roles/storage.objectAdmin"]),
])
def test_the_line_names_the_path_and_what_to_do(error, words):
    text = storage_fault(error).describe()
    for word in words:
        assert word in text, text


def _raised_from_module(module: str, error: BaseException) -> BaseException:
    """`error` as raised by code whose module is `module` (where its traceback ends)."""
    namespace = {"__name__": module}
    exec("def fail(error):\n    raise error\n", namespace)
    try:
        namespace["fail"](error)
    except BaseException as raised:  # noqa: BLE001
        return raised
    raise AssertionError("not raised")


def test_a_plain_error_tensorflows_own_python_raised_about_a_full_disk_is_storage():
    # TensorFlow's summary writer re-raises its writer thread's failure as a built-in
    # RuntimeError (an evaluator writing its eval summaries on a full NFS volume).
    text = ("/m/eval/events.out.tfevents.1795995319.demo-evaluator-0; No space left on "
            "device\n\tFailed to flush 3 events to /m/eval/events.out.tfevents.1795995319")
    writer = "tensorflow.python.summary.writer.event_file_writer"
    fault = storage_fault(_raised_from_module(writer, RuntimeError(text)))
    assert fault is not None and fault.kind == FAILED
    assert "No space left on device" in fault.describe()
    # The same words raised by a program's own code are the program's error.
    assert storage_fault(_raised_from_module("my_program", RuntimeError(text))) is None


def test_a_directory_tensorflow_could_not_stat_is_a_transient_storage_fault(tmp_path):
    # TensorFlow's RecursivelyCreateDir calls a directory it could not stat (an NFS ESTALE)
    # "not a directory": chaos row estimator-nfs-storage, a tf.estimator chief's
    # meta-graph write, exited 1 (permanent) for it at stop 59's CI.
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    error = tf.errors.FailedPreconditionError(None, None, f"{model_dir} is not a directory")
    fault = storage_fault(error)
    assert fault is not None and fault.kind == UNAVAILABLE and fault.retryable
    assert fault.path == str(model_dir)
    assert "could not look it up" in fault.describe()
    # A file where model_dir should be is the program's error, told as before.
    a_file = tmp_path / "model.txt"
    a_file.write_text("not a directory")
    assert storage_fault(tf.errors.FailedPreconditionError(
        None, None, f"{a_file} is not a directory")) is None
    assert storage_fault(tf.errors.FailedPreconditionError(
        None, None, f"{tmp_path / 'gone'} is not a directory")) is None


def test_a_directory_whose_look_up_still_fails_or_hangs_is_transient(tmp_path):
    from trainexec.contract.storage_faults import _a_directory_after_all

    def stale(path):
        raise OSError(errno.ESTALE, "Stale file handle", path)

    def gone(path):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)

    assert _a_directory_after_all(str(tmp_path), look_up_fn=stale)
    assert not _a_directory_after_all(str(tmp_path), look_up_fn=gone)
    # A hard-mounted NFS whose server is gone never answers: the task still ends.
    never = threading.Event()
    try:
        assert _a_directory_after_all(str(tmp_path), within_secs=0.2,
                                      look_up_fn=lambda path: never.wait())
    finally:
        never.set()
