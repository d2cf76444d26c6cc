# The same job by hand with MultiWorkerMirroredStrategy: TF_CONFIG, role and strategy,
# checkpoints, backup, the completion record and the evaluator are the user's to wire.
import json
import os
import sys

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
cluster = {job: hosts for job, hosts in tf_config["cluster"].items() if job != "evaluator"}
resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
    tf.train.ClusterSpec(cluster), task_type=task["type"], task_id=task["index"],
    rpc_layer="grpc")
strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
with strategy.scope():
    model = build_model()
data = strategy.distribute_datasets_from_function(train_input_fn)
callbacks = [
    tf.keras.callbacks.BackupAndRestore(os.path.join(model_dir, "backup")),
    # Keras writes the non-chief workers' copies to temporary directories itself.
    tf.keras.callbacks.ModelCheckpoint(os.path.join(model_dir, "ckpt-{epoch}.weights.h5"),
                                       save_weights_only=True),
    trainexec.TrainingCompleteCallback(model_dir),
]
model.fit(data, epochs=max_steps // steps_per_save, steps_per_epoch=steps_per_save,
          callbacks=callbacks, verbose=0)
