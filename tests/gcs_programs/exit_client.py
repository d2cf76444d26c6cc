"""A program that ends while a daemon thread of trainexec's kind reads gs:// through
TensorFlow's client, the read held by the test (the emulator paused) until just after the
program's code is over, for tests/cluster/test_testing_gcs.py.

  exit_client.py URL

Prints "ready" once the thread reads in a loop, waits for a line on stdin, prints
"program over" and returns; the test then resumes the emulator.
"""

from __future__ import annotations

import sys
import threading
import time


def main(url: str) -> None:
    import tensorflow as tf

    from trainexec.contract.tensorflow_calls import tensorflow_call

    tf.io.gfile.exists(url)  # the client made

    def poll() -> None:  # as the peer watchdog reads the finished-task records
        while True:
            with tensorflow_call():
                tf.io.gfile.exists(url)
            time.sleep(0.05)

    threading.Thread(target=poll, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.readline()
    time.sleep(0.5)  # the read in flight meets the paused emulator
    print("program over", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
