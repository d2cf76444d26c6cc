"""A trainexec.estimator chief restarted in a cluster whose ps kept serving: in one
process, a ps server and a chief server (tf.distribute.Server); the chief trains to
step 10, then the cluster moves on without it (the global step on the ps is set to
`ahead`, as the workers would have), then a new chief (a new Estimator, as after a
restart) trains to `max_steps`. Prints JSON: the steps the new chief ran, the global
step the cluster ended at, and the latest checkpoint.

    python chief_restart.py MODEL_DIR AHEAD MAX_STEPS
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import portpicker  # noqa: E402
import tensorflow as tf  # noqa: E402

import trainexec.estimator as te  # noqa: E402
from engine_models import make_model_fn, train_input_fn  # noqa: E402
from trainexec.cluster.config import ClusterConfig  # noqa: E402


class CountSteps(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        self.steps = 0

    def after_run(self, run_context, run_values):
        self.steps += 1


def main(model_dir, ahead, max_steps):
    chief, ps = (f"127.0.0.1:{portpicker.pick_unused_port()}" for _ in range(2))
    spec = {"chief": [chief], "ps": [ps]}
    tf.distribute.Server(tf.train.ClusterSpec(spec), job_name="ps", task_index=0)
    tf.distribute.Server(tf.train.ClusterSpec(spec), job_name="chief", task_index=0)
    cluster = ClusterConfig.from_dict({"cluster": spec, "task": {"type": "chief",
                                                                  "index": 0}})

    def estimator():
        return te.Estimator(make_model_fn(te), model_dir=model_dir, params={"lr": 0.05},
                            config=te.RunConfig(save_checkpoints_steps=5,
                                                tf_random_seed=3, cluster=cluster))

    estimator().train(train_input_fn, max_steps=10)
    with tf.Graph().as_default():  # the workers trained on: the ps is at `ahead`
        with tf.compat.v1.device("/job:ps/task:0"):
            step = tf.compat.v1.train.get_or_create_global_step()
        with tf.compat.v1.Session(f"grpc://{chief}") as session:
            session.run(step.assign(ahead))
    counter = CountSteps()
    estimator().train(train_input_fn, max_steps=max_steps, hooks=[counter])
    with tf.Graph().as_default():
        with tf.compat.v1.device("/job:ps/task:0"):
            step = tf.compat.v1.train.get_or_create_global_step()
        with tf.compat.v1.Session(f"grpc://{chief}") as session:
            cluster_step = int(session.run(step))
    print(json.dumps({"steps_run": counter.steps, "cluster_step": cluster_step,
                      "latest": tf.train.latest_checkpoint(model_dir)}), flush=True)
    os._exit(0)  # the in-process servers never stop by themselves


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
