"""A canned estimator in a cluster with a ps puts its variables there, as tf.estimator's
did: every variable of the model, its optimizers' slots and the global step on the ps
task (round robin over two), the computation on the task that trains. The graph is the
one the chief and each worker build (`trainexec.estimator_engine.graph.build_graph`); the
cluster run itself is tests/cluster/test_examples_canned_job.py."""

import json

import pytest
import tensorflow as tf

from trainexec.estimator_engine.graph import build_graph
from trainexec.examples.canned_job import MODELS, make_canned_estimator
from trainexec.examples.estimator_job import build_specs

pytestmark = pytest.mark.tf_line

CLUSTER = {"chief": ["127.0.0.1:2220"], "worker": ["127.0.0.1:2221"],
           "ps": ["127.0.0.1:2222", "127.0.0.1:2223"]}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("task", [("chief", 0), ("worker", 0)])
def test_every_variable_lives_on_a_ps_and_the_steps_run_on_the_training_task(
        tmp_path, monkeypatch, model, task):
    task_type, index = task
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": CLUSTER, "task": {"type": task_type, "index": index}}))
    estimator = make_canned_estimator(str(tmp_path), model=model)
    assert estimator.config.num_ps_replicas == 2
    train_spec, _ = build_specs(None)
    graph = tf.Graph()
    with graph.as_default():
        built = build_graph(estimator.model_fn, estimator.params, estimator.config, "train",
                            input_fn=train_spec.input_fn)
        variables = tf.compat.v1.global_variables()
    assert variables
    devices = {v.op.name: v.device for v in variables}
    off_ps = {name: device for name, device in devices.items()
              if not device.startswith("/job:ps/task:")}
    assert not off_ps, off_ps
    assert {device for device in devices.values()} == {"/job:ps/task:0", "/job:ps/task:1"}
    assert devices["global_step"].startswith("/job:ps/")
    slots = [name for name in devices if "/Adam" in name or "/Ftrl" in name]
    assert slots, sorted(devices)  # the optimizers' slots are among them
    # The forward and backward passes run here; only the updates run on the ps.
    here = f"/job:{task_type}/task:{index}"
    products = [op for op in graph.get_operations() if op.type == "MatMul"]
    assert products and all(op.device.startswith(here) for op in products), \
        {op.name: op.device for op in products if not op.device.startswith(here)}
    assert built.spec.loss.device.startswith(here), built.spec.loss.device
