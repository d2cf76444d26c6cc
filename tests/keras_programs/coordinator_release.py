"""A ParameterServerStrategy coordinator in one process (a worker and a ps served
in-process), a few scheduled steps, then trainexec's release_coordinator: prints
what it returned and which coordinator threads still run, as JSON."""

import json
import threading

import portpicker
import tensorflow as tf

from trainexec.keras.faults.coordinator_release import release_coordinator


def main() -> None:
    spec = {"chief": [f"localhost:{portpicker.pick_unused_port()}"],
            "worker": [f"localhost:{portpicker.pick_unused_port()}"],
            "ps": [f"localhost:{portpicker.pick_unused_port()}"]}
    cluster = tf.train.ClusterSpec(spec)
    servers = [tf.distribute.Server(cluster, job_name=job, task_index=0, protocol="grpc",
                                    start=True) for job in ("worker", "ps")]
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        cluster, task_type="chief", task_id=0, rpc_layer="grpc")
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        total = tf.Variable(0.0)

    @tf.function
    def step():
        total.assign_add(1.0)

    for _ in range(5):
        coordinator.schedule(step)
    coordinator.join()
    names = ("WorkerClosureProcessingLoop-", "WorkerPreemptionHandler")
    before = sorted(t.name for t in threading.enumerate() if t.name.startswith(names))
    released = release_coordinator(strategy, timeout_secs=10)
    after = sorted(t.name for t in threading.enumerate()
                   if t.name.startswith(names) and t.is_alive())
    print(json.dumps({"total": float(total.numpy()), "released": released,
                      "before": before, "after": after, "servers": len(servers)}),
          flush=True)


if __name__ == "__main__":
    main()
