# The same job by hand with ParameterServerStrategy: TF_CONFIG, role and strategy,
# servers that must end by themselves, checkpoints, the completion record and the
# evaluator are the user's to wire.
import json
import os
import sys
import time

import tensorflow as tf

import trainexec
from trainexec.examples.keras_job import build_model, eval_input_fn, train_input_fn

model_dir, max_steps = sys.argv[1], int(sys.argv[2])
steps_per_save = 50
tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
task = tf_config.get("task", {})
if task.get("type") == "evaluator":
    trainexec.SidecarEvaluator(build_model(), eval_input_fn(), model_dir).start()
    sys.exit(0)
cluster = tf.train.ClusterSpec(
    {job: hosts for job, hosts in tf_config["cluster"].items() if job != "evaluator"})
if task["type"] in ("worker", "ps"):
    started = time.time()
    server = tf.distribute.Server(cluster, job_name=task["type"], task_index=task["index"],
                                  protocol="grpc", start=True)
    done = os.path.join(model_dir, "trainexec", "training_complete.json")
    # Serve until the chief records that training is over (this run's record only).
    while not (os.path.exists(done) and os.path.getmtime(done) > started):
        time.sleep(1)
    sys.exit(0)
resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
    cluster, task_type=task["type"], task_id=task["index"], rpc_layer="grpc")
strategy = tf.distribute.ParameterServerStrategy(resolver)
with strategy.scope():
    model = build_model()
data = tf.keras.utils.experimental.DatasetCreator(train_input_fn)
callbacks = [
    tf.keras.callbacks.ModelCheckpoint(os.path.join(model_dir, "ckpt-{epoch}.weights.h5"),
                                       save_weights_only=True),
    trainexec.TrainingCompleteCallback(model_dir),
]
model.fit(data, epochs=max_steps // steps_per_save, steps_per_epoch=steps_per_save,
          callbacks=callbacks, verbose=0)
