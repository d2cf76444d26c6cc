"""trainexec.keras.ps_links against a real ParameterServerStrategy cluster: the
worker and the ps are processes of their own, this process is the chief. Checks
the links once with everything up, then again after SIGKILL of the ps (it is not
restarted), and prints both results as JSON."""

import json
import os
import signal
import subprocess
import sys

import portpicker
import tensorflow as tf

from trainexec.keras.ps_links import touch_ps, wait_for_ps_links, worker_devices

SERVER = ("import json, sys, time, tensorflow as tf; "
          "tf.distribute.Server(tf.train.ClusterSpec(json.loads(sys.argv[1])), "
          "job_name=sys.argv[2], task_index=0, protocol='grpc', start=True); "
          "print('serving', flush=True); time.sleep(600)")


def main() -> None:
    spec = {job: [f"localhost:{portpicker.pick_unused_port()}"]
            for job in ("chief", "worker", "ps")}
    servers = {job: subprocess.Popen([sys.executable, "-c", SERVER, json.dumps(spec), job],
                                     stdout=subprocess.PIPE, text=True, env=os.environ)
               for job in ("worker", "ps")}
    try:
        for server in servers.values():
            assert server.stdout.readline().strip() == "serving"
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(spec), task_type="chief", task_id=0, rpc_layer="grpc")
        strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
        with strategy.scope():
            weights = tf.Variable(tf.ones([4, 3]))
            step = tf.Variable(0, dtype=tf.int64)
        touch = touch_ps([weights, step])
        workers = worker_devices(spec)
        up = wait_for_ps_links(workers, touch, timeout_secs=5)
        servers["ps"].send_signal(signal.SIGKILL)
        servers["ps"].wait()
        gone = wait_for_ps_links(workers, touch, timeout_secs=2, poll_secs=0.2)
        print(json.dumps({"devices": [weights.device, step.device], "workers": workers,
                          "up": {w: vars(link) for w, link in up.items()},
                          "gone": {w: vars(link) for w, link in gone.items()}}), flush=True)
    finally:
        for server in servers.values():
            server.kill()
    os._exit(0)  # the chief's eager context still points at the dead ps


if __name__ == "__main__":
    main()
