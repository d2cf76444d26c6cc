"""A trainexec task that ends one way, for the exit-code contract's tests.

    python ends.py WAY

WAY: done, user_error (the user's code raises in a cluster task), config_error
(a bad TF_CONFIG), peer_lost (a collective error reaches the training task),
server_unavailable (the task's port is taken), preempted (SIGTERM during a
local KerasTrainer run).
The process ends however trainexec makes it end; the test reads the exit code.
"""

import json
import os
import socket
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import trainexec  # noqa: E402
from trainexec.contract.exit_codes import install_exit_hook  # noqa: E402
from trainexec.trainer import TRAIN, RolePlan, TrainerBase  # noqa: E402


def _data(context=None):
    x = tf.random.stateless_normal((64, 2), seed=(1, 2))
    return tf.data.Dataset.from_tensor_slices((x, tf.reduce_sum(x, 1))).batch(8).repeat()


def _model():
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


class RaisingTrainer(TrainerBase):
    """A `trainexec.trainer.Trainer` whose training task of a two-task cluster
    raises `error`."""

    def __init__(self, model_dir, error):
        self.model_dir, self.error = model_dir, error
        os.environ["TF_CONFIG"] = json.dumps({"cluster": {"chief": ["127.0.0.1:1"],
                                                          "worker": ["127.0.0.1:2"]},
                                              "task": {"type": "chief", "index": 0}})

    def plan_role(self, cluster):
        return RolePlan(cluster.task_name, TRAIN)

    def task_hooks(self, plan, settings):  # as its role starts
        raise self.error


def _run(trainer, max_steps=10):
    trainexec.train_and_evaluate(trainer, trainexec.TrainSpec(_data, max_steps=max_steps),
                                 trainexec.EvalSpec(_data, steps=1, throttle_secs=0))


def main(way: str, model_dir: str) -> None:
    if way == "done":
        _run(trainexec.KerasTrainer(_model, model_dir, save_checkpoints_steps=5))
    elif way == "user_error":
        _run(RaisingTrainer(model_dir, RuntimeError("the user's input_fn failed")))
    elif way == "config_error":
        os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["127.0.0.1:1"]},
                                              "task": {"type": "worker", "index": 3}})
        _run(trainexec.KerasTrainer(_model, model_dir, save_checkpoints_steps=5))
    elif way == "peer_lost":
        # What a collective op raises when a MultiWorkerMirroredStrategy peer dies.
        _run(RaisingTrainer(model_dir, tf.errors.UnavailableError(
            None, None, "Collective ops is aborted by: task /job:worker/replica:0/task:1 "
            "heartbeat timeout")))
    elif way == "server_unavailable":
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cluster = {"cluster": {"chief": [f"127.0.0.1:{port}"], "worker": ["127.0.0.1:1"],
                               "ps": ["127.0.0.1:2"]},
                   "task": {"type": "ps", "index": 0}}
        os.environ["TF_CONFIG"] = json.dumps({**cluster, "task": {"type": "chief",
                                                                  "index": 0}})
        from trainexec.cluster.config import ClusterConfig
        from trainexec.cluster.server import start_standard_server

        install_exit_hook("chief:0")
        start_standard_server(ClusterConfig.from_env())
    elif way == "preempted":
        import signal
        import threading

        class SigtermAtStep(tf.keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                if batch == 3:
                    threading.Thread(target=os.kill,
                                     args=(os.getpid(), signal.SIGTERM)).start()
        _run(trainexec.KerasTrainer(_model, model_dir, save_checkpoints_steps=50,
                                    callbacks=[SigtermAtStep()]), max_steps=400)
    else:
        raise SystemExit(f"unknown way {way!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
