"""One gs:// operation of TensorFlow's client timed, for tests/cluster/test_testing_gcs.py's
fault rows: prints {"secs": how long it took, "error": its error or null, "storage": what
trainexec.contract.storage_faults makes of it}.

  faults_client.py write URL | read URL | list URL | stat URL [--wait]

--wait: with TensorFlow loaded and the client made, print "ready" and wait for a line on
stdin before the operation, so that it meets a fault the test injects in between.
"""

from __future__ import annotations

import json
import sys
import time


def main(op: str, url: str, wait: bool) -> None:
    import tensorflow as tf

    from trainexec.contract.storage_faults import storage_fault

    tf.io.gfile.exists(url.rsplit("/", 1)[0])  # the client made before the wait
    if wait:
        print("ready", flush=True)
        sys.stdin.readline()
    began = time.monotonic()
    error = storage = None
    try:
        if op == "write":
            with tf.io.gfile.GFile(url, "w") as f:
                f.write("payload " * 64)
        elif op == "read":
            with tf.io.gfile.GFile(url, "rb") as f:
                f.read(1 << 20)
        elif op == "list":
            tf.io.gfile.glob(url + "*")
        else:
            tf.io.gfile.stat(url)
    except Exception as err:  # noqa: BLE001 - reported, the test judges it
        error = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
        fault = storage_fault(err)
        storage = fault.describe() if fault else None
    print(json.dumps({"secs": round(time.monotonic() - began, 2), "error": error,
                      "storage": storage}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--wait" in sys.argv[3:])
