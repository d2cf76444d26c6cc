"""trainexec.keras.faults.ps_links against real ParameterServerStrategy processes.

  ps_links.py serve SPEC JOB          a TensorFlow server for JOB (worker or ps)
  ps_links.py chief SPEC [PS_PID]     a chief: checks that the worker reaches the ps;
                                      with PS_PID, then SIGKILLs that ps and checks
                                      again; prints the results as JSON

SPEC is the cluster as JSON ({"chief": [...], "worker": [...], "ps": [...]}).
"""

import json
import os
import signal
import sys
import time

import tensorflow as tf

from trainexec.keras.faults.ps_links import touch_ps, wait_for_ps_links, worker_devices


def serve(spec: dict, job: str) -> None:
    tf.distribute.Server(tf.train.ClusterSpec(spec), job_name=job, task_index=0,
                         protocol="grpc", start=True)
    print("serving", flush=True)
    time.sleep(600)


def chief(spec: dict, ps_pid: int | None) -> None:
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(spec), task_type="chief", task_id=0, rpc_layer="grpc")
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    with strategy.scope():
        weights = tf.Variable(tf.ones([4, 3]))
        step = tf.Variable(0, dtype=tf.int64)
    touch = touch_ps([weights, step])
    workers = worker_devices(spec)
    report = {"devices": [weights.device, step.device], "workers": workers,
              "up": {w: vars(link) for w, link in wait_for_ps_links(workers, touch).items()}}
    if ps_pid is not None:
        os.kill(ps_pid, signal.SIGKILL)
        gone = wait_for_ps_links(workers, touch, timeout_secs=2, poll_secs=0.2)
        report["gone"] = {w: vars(link) for w, link in gone.items()}
    print(json.dumps(report), flush=True)
    os._exit(0)  # after the kill, the eager context still points at the dead ps


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(json.loads(sys.argv[2]), sys.argv[3])
    else:
        chief(json.loads(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
