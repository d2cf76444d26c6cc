"""A local KerasTrainer run under MirroredStrategy with two replicas, on a machine
without GPUs: the CPU is split into two logical devices, which stand in for two
GPUs (`visible_gpus` says 2; MirroredStrategy gets the two CPUs). Logical devices
must be set before TensorFlow starts, hence a process of its own.

Prints one JSON line per model: {"model", "metrics", "steps_evaluated"}.

Usage: mirrored_local.py MODEL_DIR_PREFIX
"""

import json
import os
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras_toy  # noqa: E402
import trainexec.keras.trainer  # noqa: E402
from trainexec.cluster.config import ClusterConfig  # noqa: E402
from trainexec.evaluation.listeners import ContinuousEvalListener  #noqa: E402
from trainexec.executor import TrainingExecutor  # noqa: E402
from trainexec.keras.trainer import KerasTrainer  # noqa: E402
from trainexec.specs import EvalSpec, TrainSpec  # noqa: E402


class StepsSeen(ContinuousEvalListener):
    def __init__(self):
        self.steps = []

    def after_eval(self, eval_result):
        self.steps.append(eval_result.global_step)
        return True


def main(prefix):
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    two_devices = tf.distribute.MirroredStrategy
    tf.distribute.MirroredStrategy = lambda *a, **k: two_devices(["/cpu:0", "/cpu:1"])
    trainexec.keras.trainer.visible_gpus = lambda: 2
    for name in ("dense", "custom"):
        seen = StepsSeen()
        metrics, _ = TrainingExecutor(
            KerasTrainer(keras_toy.BUILDERS[name], f"{prefix}-{name}",
                         save_checkpoints_steps=20),
            TrainSpec(keras_toy.train_input_fn, max_steps=50),
            EvalSpec(keras_toy.eval_dataset, steps=None, throttle_secs=0),
            continuous_eval_listener=seen, cluster=ClusterConfig()).run()
        print(json.dumps({"model": name, "metrics": metrics, "steps_evaluated": seen.steps}),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
