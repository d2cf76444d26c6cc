"""trainexec/estimator_engine/compat/device_input.py: a strategy's iterator made inside
`device_datasets_without_autotune` builds each device's dataset with tf.data's
autotuning off, one made outside it as TensorFlow does, and TensorFlow's function is
back after the block, also when the block raises.

The iterators are made in a process of their own: a MultiDeviceIterator made before any
session of two CPU devices leaves this process's TensorFlow with one, which fails the
two-replica tests that may run after it in the same pytest worker."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.tf_line

PROGRAM = r"""
import importlib
import json
import tensorflow as tf
from tensorflow.core.framework import dataset_options_pb2
from trainexec.estimator_engine.compat.device_input import (
    INTERNALS, device_datasets_without_autotune)

module = importlib.import_module(INTERNALS[0].owner)
original = getattr(module, INTERNALS[0].attribute)


def settings(graph):
    found = []
    for op in graph.get_operations():
        if op.type == "OptionsDataset":
            options = dataset_options_pb2.Options.FromString(
                op.get_attr("serialized_options"))
            if options.autotune_options.HasField("enabled"):
                found.append(options.autotune_options.enabled)
    return found


def iterator():
    strategy = tf.distribute.MirroredStrategy(devices=["/device:CPU:0", "/device:CPU:1"])
    return strategy.make_input_fn_iterator(lambda context: tf.data.Dataset.range(8))


with tf.Graph().as_default() as inside, device_datasets_without_autotune():
    iterator()
restored = getattr(module, INTERNALS[0].attribute) is original
with tf.Graph().as_default() as outside:
    iterator()
try:
    with device_datasets_without_autotune():
        raise RuntimeError("in the block")
except RuntimeError:
    pass
print(json.dumps({"inside": settings(inside), "outside": settings(outside),
                  "restored": restored,
                  "restored_after_error": getattr(module, INTERNALS[0].attribute)
                  is original}))
"""


def test_each_devices_dataset_is_made_without_autotune_only_inside_the_block():
    run = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen == {"inside": [False, False],  # one dataset per device, two devices
                    "outside": [],  # TensorFlow's own: nothing set
                    "restored": True, "restored_after_error": True}
