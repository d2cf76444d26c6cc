"""Trains the engine tests' model with the real tf.estimator (TensorFlow 2.15) in
MODEL_DIR up to MAX_STEPS and prints its evaluation of the last checkpoint as JSON.

    python tf_estimator_run.py MODEL_DIR MAX_STEPS
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf  # noqa: E402

from engine_models import eval_input_fn, make_model_fn, train_input_fn  # noqa: E402

model_dir, max_steps = sys.argv[1], int(sys.argv[2])
config = tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=50,
                                tf_random_seed=3)
estimator = tf.estimator.Estimator(make_model_fn(tf.estimator), config=config,
                                   params={"lr": 0.05})
estimator.train(train_input_fn, max_steps=max_steps)
metrics = estimator.evaluate(eval_input_fn)
print(json.dumps({"tensorflow": tf.__version__,
                  "metrics": {key: float(value) for key, value in metrics.items()}}))
